"""Finding a model's quote in the source text, as character offsets into the original.

Order of attempts: the exact quote; then a normalised match where both sides have whitespace
runs collapsed, typographic quotes/dashes made plain, Markdown emphasis markers (``*``,
backticks) and line-start list bullets removed and case folded; then the quote without a
leading ``Label:`` the model added; then, for a quote with an ellipsis, each fragment in
order (giving several spans). A normalised match is mapped back through a per-character
offset table, so the span always covers original text, never the normalised copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_QUOTE_CHARS = 8  # shorter quotes match too much to trace anything
_FOLD = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": None,
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "*": None,
        "\u2039": "<",  # "‹": prompts show "<|" and our tags defused (workbench.prompts.fencing)
    }
)
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.+|\u2026|\[\.\.\.\])\s*")
_EDGE_PUNCT = " \t\n\"'.,;:!?-()[]"
_LINE_MARK = re.compile(r"(?m)^[ \t]*(?:[-*+]|\d{1,3}[.)]|#{1,6})[ \t]+")
# "Travel insurance: the agent should ask ..." where only the part after the label is in the
# text (the label is a heading or a list's lead-in line).
_LABEL = re.compile(r"^[^:\n]{2,48}:\s+(.+)$", re.S)


@dataclass(frozen=True)
class Located:
    """Where a quote was found: relative ``spans`` and how (``exact``/``normalised``/``fragments``)."""

    spans: tuple[tuple[int, int], ...]
    method: str


def _normalise(text: str) -> tuple[str, list[int]]:
    """Normalised text and, for each of its characters, the index of the original character.

    List bullets, numbers and heading marks at line starts count as whitespace: models join
    a label line and its list items into one sentence when they quote."""
    out: list[str] = []
    where: list[int] = []
    markers = {i for m in _LINE_MARK.finditer(text) for i in range(m.start(), m.end())}
    last_space = True  # drop leading whitespace
    for i, ch in enumerate(text):
        mapped = " " if i in markers else ch.translate(_FOLD)
        for c in mapped:
            if c.isspace():
                if last_space:
                    continue
                out.append(" ")
                where.append(i)
                last_space = True
                continue
            for folded in c.casefold():
                out.append(folded)
                where.append(i)
            last_space = False
    return "".join(out), where


def _norm_quote(quote: str) -> str:
    text, _ = _normalise(quote)
    return text.strip(_EDGE_PUNCT)


def _find_normalised(quote: str, norm: tuple[str, list[int]]) -> tuple[int, int] | None:
    """Where ``quote`` stands in the text whose :func:`_normalise` is ``norm`` (original
    offsets), or None."""
    needle = _norm_quote(quote)
    if len(needle) < MIN_QUOTE_CHARS:
        return None
    hay, where = norm
    k = hay.find(needle)
    if k < 0:
        return None
    return where[k], where[k + len(needle) - 1] + 1


def locate(quote: str, text: str) -> Located | None:
    """Spans of ``quote`` inside ``text`` (offsets relative to ``text``), or None.

    Surrounding whitespace of the quote is ignored; a quote shorter than ``MIN_QUOTE_CHARS``
    after normalisation is never located (it would match almost anywhere).
    """
    q = quote.strip()
    if len(_norm_quote(q)) < MIN_QUOTE_CHARS:
        return None
    k = text.find(q)
    if k >= 0:
        return Located(((k, k + len(q)),), "exact")
    norm = _normalise(text)
    label = _LABEL.match(q)
    for candidate in (q, label.group(1)) if label else (q,):
        found = _find_normalised(candidate, norm)
        if found:
            return Located((found,), "normalised")
    parts = [p for p in _ELLIPSIS.split(q) if p.strip()]
    if len(parts) > 1:
        spans: list[tuple[int, int]] = []
        offset = 0
        for part in parts:
            sub = _find_normalised(part, _normalise(text[offset:]))
            if sub is None:
                return None
            spans.append((sub[0] + offset, sub[1] + offset))
            offset = sub[1] + offset
        return Located(tuple(spans), "fragments")
    return None


def min_quote_ok(quote: str) -> bool:
    return len(_norm_quote(quote)) >= MIN_QUOTE_CHARS
