"""One way to show a ``WorkbenchError`` on a page: escaped, with what happened and what to do.

The CLI prints the same error as ``error: message; hint`` (``workbench.cli.main``); a page
calls ``show_error(exc, lead=..., after=...)`` where it catches one, so no page formats or
escapes error text by hand.
"""

from __future__ import annotations

import streamlit as st

from components.safe import md


def error_text(exc: BaseException, lead: str = "", after: str = "") -> str:
    """``lead`` + the error (message, then hint on its own line) + ``after``, unescaped.

    A WorkbenchError whose subclass wrote its hint into the message shows as one paragraph;
    any other exception shows its ``str()``.
    """
    message = getattr(exc, "message", None) or str(exc)
    hint = getattr(exc, "hint", "") or ""
    text = f"{lead}{message}"
    if hint and hint not in message:  # ModelCallError already words its hint into the text
        text += f"\n\nWhat to do: {hint}"
    if after:
        text += f"\n\n{after}"
    return text


def show_error(exc: BaseException, lead: str = "", after: str = "", *, block: bool = False) -> None:
    """Render ``exc`` in an error box; all of it is Markdown-escaped (it quotes user files,
    policies and model output).

    ``block``: ``lead`` in the box and the error's full text below it as a plain-text block,
    for errors that list many problems one per line (a contract, a configuration, a table)."""
    if block:
        st.error(md(lead))
        st.code(str(exc), language=None, wrap_lines=True)
        return
    st.error(md(error_text(exc, lead, after)))
