"""Escaping for Streamlit's Markdown-rendering widgets (``st.markdown``, ``st.error``, ...).

Streamlit already refuses raw HTML there, but Markdown itself can load images and links, so
any text from policies, conversations or models is backslash-escaped before it goes in.
"""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$&:])")


def md(text: object) -> str:
    """``text`` with every Markdown-significant character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", "  \n")
