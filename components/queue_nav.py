"""Working through a queue one item at a time, by keyboard: the position, Previous/Next
buttons with shortcuts, the shortcut legend, and the message a button callback leaves for
the next run (the Review queue and the Annotate page's rule queue share these).

Button callbacks run before the script reruns, so they cannot draw; they leave a flash
``(kind, text)`` under a page's key, and :func:`show_flash` draws it on the next run.
Flash texts often quote user input, so they are escaped here.

Usage::

    pos = queue_nav.position("rv_pos/demo", len(items))
    queue_nav.nav_buttons("rv", "rv_pos/demo", pos, len(items))
    queue_nav.key_legend([("Y", "confirm"), ("J", "next"), ("K", "previous")])
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

from components.safe import md

NEXT_KEY, PREVIOUS_KEY = "j", "k"
_KINDS = ("error", "success", "info", "warning")

# Theme-following colours (see components/spans.py): inherited text, translucent tints.
# The hints wrap as "key what" pairs: with nowrap spans and nothing between them, the row had
# no break point and ran past its column at 1280 and 800 px (issue 44). A pair wider than a
# narrow column ("5 incorrect: span does not support it") wraps its words, the key first.
_LEGEND_STYLE = (
    "<style>.wb-keys kbd{border:1px solid rgba(128,128,128,0.5);border-radius:3px;"
    "padding:0 4px;font-size:0.85em;background:rgba(128,128,128,0.12);flex:none}"
    ".wb-keys{display:flex;flex-wrap:wrap;column-gap:0.9rem;row-gap:0.25rem;max-width:100%}"
    ".wb-keys span{display:inline-flex;align-items:baseline;gap:0.3em;max-width:100%}</style>"
)


def leave_flash(flash_key: str, kind: str, text: str) -> None:
    """Keep a message for the next run (call from a button callback, or before ``st.rerun``)."""
    if kind not in _KINDS:
        raise ValueError(f"flash kind {kind!r} is unknown; use one of {', '.join(_KINDS)}")
    st.session_state[flash_key] = (kind, text)


def show_flash(flash_key: str) -> None:
    """Draw (once) the message a callback left under ``flash_key``, escaped."""
    kind, text = st.session_state.pop(flash_key, (None, None))
    if kind in _KINDS:
        getattr(st, kind)(md(text))


def position(pos_key: str, size: int) -> int:
    """The current position, kept within ``0 .. size - 1`` (a queue can shrink between runs:
    a filter changed, or a decided item left it) and stored back."""
    pos = max(0, min(int(st.session_state.get(pos_key, 0)), size - 1))
    st.session_state[pos_key] = pos
    return pos


def move(pos_key: str, step: int, size: int) -> None:
    """Button callback: ``step`` items on (negative: back), never past either end."""
    st.session_state[pos_key] = max(0, min(size - 1, st.session_state.get(pos_key, 0) + step))


def advance(pos_key: str, size: int) -> None:
    """After a decision: on to the next item, staying on the last one."""
    move(pos_key, 1, size)


def nav_buttons(prefix: str, pos_key: str, pos: int, size: int,
                previous_key: str = PREVIOUS_KEY, next_key: str = NEXT_KEY) -> None:
    """Previous and Next, side by side, keyed ``{prefix}_prev`` / ``{prefix}_next``."""
    left, right = st.columns(2)
    left.button("Previous", key=f"{prefix}_prev", shortcut=previous_key, on_click=move,
                args=(pos_key, -1, size), disabled=pos <= 0, width="stretch")
    right.button("Next", key=f"{prefix}_next", shortcut=next_key, on_click=move,
                 args=(pos_key, 1, size), disabled=pos >= size - 1, width="stretch")


def key_legend(keys: Sequence[tuple[str, str]]) -> None:
    """A legend of keyboard shortcuts, e.g. ``[("Y", "correct"), ...]``, wrapping onto more
    lines where its column is narrow."""
    parts = "".join(
        f"<span><kbd>{html.escape(k)}</kbd> {html.escape(what)}</span>" for k, what in keys
    )
    st.html(f'{_LEGEND_STYLE}<div class="wb-keys" data-testid="wb-key-legend">{parts}</div>')
