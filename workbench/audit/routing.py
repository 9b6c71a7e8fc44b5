"""Routing: which SKILLs govern a case (the upper layer of the policy index).

The case's own ``skills`` win when given (they must exist in the index). Otherwise each SKILL
is scored by the keywords against its name and description: a keyword contributes the
IDF-weighted share of its words found there. SKILLs with a positive score are returned best
first, at most ``max_skills``; none is an outcome (``NoRoute``), never a silent "use all".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.audit.cases import AuditCase
from workbench.audit.policy import AuditIndex
from workbench.audit.text import stems
from workbench.errors import WorkbenchError
from workbench.vocabulary import ErrorKind

DEFAULT_MAX_SKILLS = 2


@dataclass(frozen=True)
class Routing:
    skills: list[str]
    source: str  # "case" | "keywords"
    scores: dict[str, float]


class RoutingError(WorkbenchError, LookupError):
    """``kind`` is ``UnknownSkill`` (the case names a SKILL not in the index) or ``NoRoute``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def route(
    case: AuditCase,
    keywords: Sequence[str],
    index: AuditIndex,
    max_skills: int = DEFAULT_MAX_SKILLS,
) -> Routing:
    if case.skills:
        missing = [s for s in case.skills if s not in index]
        if missing:
            raise RoutingError(
                ErrorKind.UNKNOWN_SKILL,
                f"case {case.id!r} names SKILL(s) not in the index: {', '.join(missing)}; "
                f"known: {', '.join(index.names) or '(none)'}. Fix the case's 'skills' or "
                "load the index that holds them",
            )
        return Routing(list(dict.fromkeys(case.skills)), "case", {})
    per_keyword = [ks for kw in keywords if (ks := set(stems(kw)))]
    totals = {name: sum(sum(index.idf(s) for s in ks if s in vocab) / len(ks) for ks in per_keyword)
              for name, vocab in index.skill_words.items()}
    scores = {name: total for name, total in totals.items() if total > 0}
    ranked = sorted(scores, key=lambda n: (-scores[n], index.names.index(n)))[:max_skills]
    if not ranked:
        raise RoutingError(
            ErrorKind.NO_ROUTE,
            f"no SKILL name or description matches the keywords {list(keywords)!r}; give the "
            "case its 'skills', or try --keywords llm",
        )
    return Routing(ranked, "keywords", scores)
