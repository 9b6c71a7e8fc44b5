"""Item keys of annotation tasks, and locating a quoted span in a SKILL's source.

Item keys are *content-addressed*, so a label always refers to exactly what was judged:

- a ``rule_correctness`` item is ``"<skill>/<rule id>@<digest>"``, the digest over the rule's
  condition, action, modality and the source text of its spans. An unchanged rule in a later
  SKILL version keeps its key (and its labels); an edited rule gets a new key and is
  labelled afresh;
- a ``reference_rule`` item is ``"<skill>@<digest>"``, the digest over the SKILL source, since
  reference rules point into that text by character offsets. Editing only the extracted
  rules (a new version with the same source) keeps the reference inventory.

Keys can therefore be recomputed from a ``skillcdg/1`` index alone (``workbench annotate
report --index``), without knowing store version numbers. The queue of a SKILL version
(``store.annotation.task_items``) lists the keys of that version's rules.
"""

from __future__ import annotations

import hashlib
import json
import re

from workbench.annotation.labels import LabelError
from workbench.graph import SkillGraph

_DIGEST_CHARS = 10
# A quote may hold several pieces separated by a line with only "..." or "…": one span each.
_PIECE_SEPARATOR = re.compile(r"^\s*(?:\.\.\.|…)\s*$", re.MULTILINE)


def _digest(payload: object) -> str:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]


def rule_item(skill: SkillGraph, rule_id: str) -> str:
    """The ``rule_correctness`` item key of one rule of ``skill``; ``KeyError`` if unknown."""
    rule = skill.graph.rules[rule_id]
    quotes = [skill.source[s.start : s.end] for s in rule.spans]
    digest = _digest([rule.condition, rule.action, rule.modality, quotes])
    return f"{skill.name}/{rule.id}@{digest}"


def rule_items(skill: SkillGraph) -> dict[str, str]:
    """``{item key: rule id}`` for every rule of ``skill``, in rule order (the task queue)."""
    return {rule_item(skill, rid): rid for rid in skill.graph.rules}


def reference_item(skill: SkillGraph) -> str:
    """The ``reference_rule`` item key of a SKILL: its name and a digest of its source."""
    return f"{skill.name}@{_digest(skill.source)}"


def find_quote(source: str, quote: str) -> list[tuple[int, int]]:
    """Every ``(start, end)`` where ``quote`` occurs in ``source``, in source order.

    An exact match is tried first; failing that, runs of whitespace in the quote match any
    run of whitespace in the source (text copied from a rendered page often differs in line
    breaks and indentation). Leading and trailing whitespace of the quote is ignored.
    """
    needle = quote.strip()
    if not needle:
        return []
    exact = [(m.start(), m.start() + len(needle)) for m in re.finditer(re.escape(needle), source)]
    if exact:
        return exact
    pattern = r"\s+".join(re.escape(word) for word in needle.split())
    return [(m.start(), m.end()) for m in re.finditer(pattern, source)]


def locate_quote(source: str, quote: str, occurrence: int = 1) -> tuple[tuple[int, int], ...]:
    """Spans for a pasted quote: one per piece (pieces are separated by a ``...`` line).

    ``occurrence`` picks which match (1-based) when a piece occurs more than once; it applies
    to every piece. Raises :class:`LabelError` saying which piece was not found or how many
    times it occurs.
    """
    pieces = [p.strip() for p in _PIECE_SEPARATOR.split(quote) if p.strip()]
    if not pieces:
        raise LabelError("the quote is empty; paste the source text that supports the rule")
    spans = []
    for piece in pieces:
        found = find_quote(source, piece)
        short = piece if len(piece) <= 60 else piece[:57] + "..."
        if not found:
            raise LabelError(
                f"the quote {short!r} is not in the SKILL source; copy it from the source "
                "shown on the page (or give start/end offsets)"
            )
        if not 1 <= occurrence <= len(found):
            raise LabelError(
                f"the quote {short!r} occurs {len(found)} time(s); pick an occurrence between "
                f"1 and {len(found)}"
            )
        spans.append(found[occurrence - 1])
    return tuple(spans)
