"""Show SKILL source text with rule spans highlighted. All text is HTML-escaped; only our own
``<mark>`` tags are added around the escaped pieces."""

from __future__ import annotations

import html
from collections.abc import Iterable

import streamlit as st

from workbench.graph import Span

# Colours follow the active Streamlit theme (.streamlit/config.toml has a light and a dark
# variant): the text inherits the theme's text colour and the box is a translucent grey tint
# over the theme's background, so it reads in both. A highlighted span sets its own dark text
# because its yellow background is the same in both themes (tests/e2e/test_dark_contrast.py).
_STYLE = (
    "<style>.wb-src{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:0.82rem;"
    "line-height:1.45;max-height:520px;overflow:auto;color:inherit;"
    "border:1px solid rgba(128,128,128,0.35);border-radius:6px;padding:0.6rem;"
    "background:rgba(128,128,128,0.08)}"
    ".wb-src mark{background:#ffe58f;color:#1b1f24;padding:0 1px}</style>"
)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for s in sorted(spans):
        if out and s.start <= out[-1].end:
            out[-1] = Span(out[-1].start, max(out[-1].end, s.end))
        else:
            out.append(s)
    return out


def highlighted_html(source: str, spans: Iterable[Span], context_chars: int | None = None,
                     mark_class: str | None = None) -> str:
    """Escaped ``source`` with ``<mark>`` around spans. With ``context_chars``, only the text
    around the spans is kept (ellipses mark the cuts). ``mark_class``: a class for every mark
    (our own fixed word, never user text), so a caller can colour them by meaning."""
    cls = f' class="{html.escape(mark_class, quote=True)}"' if mark_class else ""
    merged = merge_spans(spans)
    lo, hi = 0, len(source)
    if context_chars is not None and merged:
        lo = max(0, merged[0].start - context_chars)
        hi = min(len(source), merged[-1].end + context_chars)
    parts: list[str] = ["…" if lo > 0 else ""]
    pos = lo
    for s in merged:
        parts.append(html.escape(source[pos : s.start]))
        parts.append(f'<mark id="span-{s.start}"{cls}>{html.escape(source[s.start : s.end])}</mark>')
        pos = s.end
    parts.append(html.escape(source[pos:hi]))
    if hi < len(source):
        parts.append("…")
    return "".join(parts)


def show_source(source: str, spans: Iterable[Span], context_chars: int | None = None) -> None:
    st.html(_STYLE + f'<div class="wb-src" data-testid="wb-source">'
            f"{highlighted_html(source, spans, context_chars)}</div>")
