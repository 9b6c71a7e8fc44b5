"""What a SKILL name may be. Names become store keys, file and folder names on export, and
labels in the UI, so a name that is empty or looks like a path is refused wherever a SKILL
enters the workbench (SKILL.md front matter, zip members, ``skillcdg/1`` indexes).

The Agent Skills specification asks for at most 64 lowercase letters, digits and hyphens;
names inferred from a ``# Heading`` may hold spaces and capitals, so only the length limit
and the characters that make a name unsafe are enforced here. Unsafe includes what makes
two names look alike on screen while the store keeps them apart (issue 36): invisible and
direction-changing characters ("retail" U+200B "-policy", a right-to-left override), text
that is not in NFKC form (full-width letters, ligatures), and a word mixing letters of two
scripts that share look-alikes (Latin "a" beside Cyrillic "а"). Names of different SKILLs
must also differ in :func:`name_skeleton` (case, compatibility forms and common look-alike
letters folded), checked where SKILLs are loaded together and where one is stored.
"""

from __future__ import annotations

import re
import unicodedata

MAX_SKILL_NAME = 64
_FIX = "give it a short name of letters, digits and hyphens (e.g. 'order-refund')"
# Invisible or layout characters: format (zero-width, bidi controls, soft hyphen, BOM),
# line/paragraph separators, private use and unassigned code points.
_INVISIBLE = ("Cf", "Zl", "Zp", "Co", "Cn")
_WORD = re.compile(r"[^\W\d_]+")  # a run of letters
# Scripts whose letters include look-alikes of each other's (a word mixing two is refused:
# a whole word in one script may sit beside a word in another, as in "возврат-policy").
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE")
# Letters of those scripts that look like a Latin letter, for name_skeleton.
_LOOK_ALIKE = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ь": "b",
    "к": "k", "м": "m", "н": "h", "т": "t", "в": "b", "г": "r", "п": "n", "ѵ": "v",
    "α": "a", "ο": "o", "ρ": "p", "ι": "i", "κ": "k", "ν": "v", "τ": "t", "υ": "u",
    "χ": "x", "ϲ": "c", "ϳ": "j", "ε": "e", "η": "n", "μ": "u", "ω": "w", "β": "b",
    "ı": "i", "ɑ": "a", "ɡ": "g", "ℓ": "l", "օ": "o", "ս": "u", "հ": "h", "ց": "g",
})


def skill_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a SKILL, or None when it can."""
    if not name.strip():
        return f"the SKILL name is empty; {_FIX}"
    if "/" in name or "\\" in name or name.strip() in (".", ".."):
        return f"the SKILL name {name[:80]!r} looks like a file path; {_FIX}"
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
        return f"the SKILL name {name[:80]!r} holds control characters; {_FIX}"
    hidden = next((ch for ch in name if unicodedata.category(ch) in _INVISIBLE), None)
    if hidden is not None:
        return (f"the SKILL name {name[:80]!r} holds an invisible or direction-changing "
                f"character ({_describe(hidden)}), so it would look like another name; "
                "remove it")
    plain = unicodedata.normalize("NFKC", name)
    if plain != name:
        return (f"the SKILL name {name[:80]!r} is written with compatibility characters "
                f"(full-width letters, ligatures, special spaces); write it as {plain[:80]!r}")
    for word in _WORD.findall(name):  # "возврат-policy" is fine, "rеtail" (Cyrillic е) is not
        scripts = sorted({_script(ch) for ch in word} & set(_CONFUSABLE_SCRIPTS))
        if len(scripts) > 1:
            # Name the odd letter out: on screen the word looks like one script.
            rare = min(scripts, key=lambda sc: sum(_script(ch) == sc for ch in word))
            odd = next(ch for ch in word if _script(ch) == rare)
            return (f"the SKILL name {name[:80]!r} mixes {' and '.join(s.title() for s in scripts)} "
                    f"letters in the word {word[:40]!r} ({_describe(odd)}), where they look "
                    "alike; write each word in one script")
    if len(name) > MAX_SKILL_NAME:
        return f"the SKILL name has {len(name)} characters, more than {MAX_SKILL_NAME}; {_FIX}"
    if name != name.strip():
        return f"the SKILL name {name!r} starts or ends with spaces; remove them"
    return None


def name_skeleton(name: str) -> str:
    """What ``name`` looks like: NFKC, case-folded, look-alike letters of other scripts
    read as the Latin ones, invisible characters dropped. Two SKILLs whose names have the
    same skeleton would display alike, so only one of them may exist."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    folded = "".join(ch for ch in folded if unicodedata.category(ch) not in _INVISIBLE)
    return unicodedata.normalize("NFKC", folded.translate(_LOOK_ALIKE))


def look_alike_problem(name: str, other: str) -> str | None:
    """Why ``name`` cannot sit beside ``other`` (another SKILL's name), or None."""
    if name != other and name_skeleton(name) == name_skeleton(other):
        return (f"the SKILL name {name[:80]!r} looks the same as {other[:80]!r} "
                "(they differ only in look-alike characters or case); rename one of them")
    return None


def _script(ch: str) -> str:
    return unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


def inferred_skill_name(text: str) -> str:
    """A usable name made from prose (a ``# Heading``): in NFKC form, path separators become
    hyphens, control and invisible characters go, and it is cut at a word boundary to
    :data:`MAX_SKILL_NAME`."""
    text = unicodedata.normalize("NFKC", text)
    name = "".join("-" if ch in "/\\" else ch for ch in text
                   if unicodedata.category(ch) not in ("Cc", "Cs", *_INVISIBLE)).strip()
    if len(name) > MAX_SKILL_NAME:
        cut = name[:MAX_SKILL_NAME + 1].rsplit(" ", 1)[0]
        name = (cut if len(cut) >= MAX_SKILL_NAME // 2 else name[:MAX_SKILL_NAME]).rstrip()
    return name
