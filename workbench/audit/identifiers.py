"""What an id that names a case (and its traces) may hold.

Case ids are printed in progress and log lines (``[audit] c7 cdg: violation ...``), error
messages and tables. An id holding a line break forged a line of its own in those logs, and
a direction-changing mark (U+202E) made one id read as another (issue 36). Such ids are
refused where cases and traces are read: every other character, any script, stays allowed.
"""

from __future__ import annotations

import unicodedata

# Bidirectional formatting characters: they reorder the text around them on screen.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _breaks_lines(ch: str) -> bool:
    # Cc: C0/C1 controls (newline, tab, NUL, ESC...); Zl/Zp: the line and paragraph separators.
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def id_problem(value: str, what: str = "id") -> str | None:
    """Why ``value`` cannot be an id (naming the character), or None when it can."""
    bad = next((ch for ch in value if _breaks_lines(ch)), None)
    if bad is None:
        return None
    return (f"{what} {value[:60]!r} holds U+{ord(bad):04X} "
            f"{unicodedata.name(bad, 'a control character')}; ids are printed in log lines "
            "and tables, so they may hold no control, line-break or direction-changing "
            "characters: remove it")
