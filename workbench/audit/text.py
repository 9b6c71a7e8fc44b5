"""Word-level text handling shared by keywords, routing, seeds and BM25.

Deterministic and dependency-free: lower-case word tokens, an English stop-word list, and a
light suffix stemmer (enough to match "refunds"/"refunded"/"refund" and
"delayed"/"delay"; not a linguistic stemmer). Every step of the audit that compares words
uses these functions, so a keyword that matches in one step matches in the others.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did do does doing don down during
    each either else ever every few for from further get gets got had has have having he her
    here hers herself him himself his how however i if in into is isn it its itself just let
    may me might more most must my myself need needs no nor not now of off on once one only or
    other others otherwise our ours ourselves out over own per please same shall she should so
    some such than that the their theirs them themselves then there these they this those
    through thus to too under until up upon us use used using very via was we were what when
    where whether which while who whom whose why will with within without would yes yet you
    your yours yourself yourselves ok okay hi hello thanks thank sure
    """.split()
)

_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "edly", "ies", "ied", "ed", "es", "s")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, deterministic suffix stripper: ``refunds``, ``refunded`` -> ``refund``."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3 or w.isdigit():
        return w
    if len(w) == 4:  # only a plain plural: "fees" -> "fee", "days" -> "day"; not "plus"
        return w[:-1] if w.endswith("s") and not w.endswith(("ss", "us", "is")) else w
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            base = w[: -len(suf)]
            if suf in ("ies", "ied"):
                return base + "y"
            if suf == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                return w[:-1]  # "fees" -> "fee", "rules" -> "rule"
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "cancelled"? keeps ll; "stopped" -> "stop"
            return base
    return w


def words(text: str) -> list[str]:
    """Lower-case word tokens in order (numbers kept; apostrophe forms kept whole)."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Tokens that can carry meaning: not stop words, at least 2 characters."""
    return [w for w in words(text) if len(w) > 1 and w not in STOPWORDS]


def stems(text: str) -> list[str]:
    """Stems of the content words of ``text``, in order, with repeats."""
    return [stem(w) for w in content_words(text)]


def stem_set(text: str) -> frozenset[str]:
    return frozenset(stems(text))
