"""Counted nouns as a person writes them: "1 rule", "2 rules", "0 proposals".

One place for the plural so no screen shows "1 rules" again (issue 35); irregular plurals
are passed explicitly (``plural(n, "case", "cases")`` is the default form).
"""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one (thousands grouped: "1,000 traces")."""
    noun = singular if count == 1 else (plural_form or singular + "s")
    return f"{count:,} {noun}"
