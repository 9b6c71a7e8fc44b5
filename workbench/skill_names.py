"""What a SKILL name may be. Names become store keys, file and folder names on export, and
labels in the UI, so a name that is empty or looks like a path is refused wherever a SKILL
enters the workbench (SKILL.md front matter, zip members, ``skillcdg/1`` indexes).

The Agent Skills specification asks for at most 64 lowercase letters, digits and hyphens;
names inferred from a ``# Heading`` may hold spaces and capitals, so only the length limit
and the characters that make a name unsafe are enforced here.
"""

from __future__ import annotations

import unicodedata

MAX_SKILL_NAME = 64
_FIX = "give it a short name of letters, digits and hyphens (e.g. 'order-refund')"


def skill_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a SKILL, or None when it can."""
    if not name.strip():
        return f"the SKILL name is empty; {_FIX}"
    if "/" in name or "\\" in name or name.strip() in (".", ".."):
        return f"the SKILL name {name[:80]!r} looks like a file path; {_FIX}"
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
        return f"the SKILL name {name[:80]!r} holds control characters; {_FIX}"
    if len(name) > MAX_SKILL_NAME:
        return f"the SKILL name has {len(name)} characters, more than {MAX_SKILL_NAME}; {_FIX}"
    if name != name.strip():
        return f"the SKILL name {name!r} starts or ends with spaces; remove them"
    return None


def inferred_skill_name(text: str) -> str:
    """A usable name made from prose (a ``# Heading``): path separators become hyphens,
    control characters go, and it is cut at a word boundary to :data:`MAX_SKILL_NAME`."""
    name = "".join("-" if ch in "/\\" else ch for ch in text
                   if unicodedata.category(ch) not in ("Cc", "Cs")).strip()
    if len(name) > MAX_SKILL_NAME:
        cut = name[:MAX_SKILL_NAME + 1].rsplit(" ", 1)[0]
        name = (cut if len(cut) >= MAX_SKILL_NAME // 2 else name[:MAX_SKILL_NAME]).rstrip()
    return name
