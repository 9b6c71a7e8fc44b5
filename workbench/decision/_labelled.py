"""Labelled cases for a fit: what the right answer of each case is (a gold label, or an
analyst's own label over it) and the judge's probability of the ones that have one.

An analyst's word is their ``analyst_label`` (what they say the reply is), stored with every
decision since the decided record (migration 0008 gave older decisions the label they meant
then); a decision made in memory without one falls back to that old meaning
(``ReviewDecision.analyst_violation``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workbench.review.decisions import ReviewDecision, current_decisions


@dataclass(frozen=True)
class Scored:
    """One labelled case: the judge's probability, whether it truly violates, its group."""

    probability: float
    violation: bool
    group: str
    case_id: str = ""


def reviewed_truth(truth: Mapping[str, bool], decisions: Iterable[ReviewDecision],
                   judged: Mapping[str, bool | None] | None = None) -> dict[str, bool]:
    """``truth`` (case id -> violation, from gold labels) with each current review decision's
    analyst label over it (a reviewer's word over an imported label; undone decisions do not
    count). ``judged``: the judge's verdict by case id, for a decision that recorded neither
    an analyst label nor the verdict it was about."""
    out = dict(truth)
    for d in current_decisions(decisions).values():
        said = d.analyst_violation
        if said is None and d.judge_violation is None and judged and judged.get(d.case_id) is not None:
            said = replace(d, judge_violation=judged[d.case_id]).analyst_violation
        if said is not None:
            out[d.case_id] = said
    return out


def scored_traces(traces: Sequence[Any], truth: Mapping[str, bool]) -> tuple[list[Scored], list[bool]]:
    """The labelled traces (``truth``: case id -> violation) whose verdict has a probability,
    as :class:`Scored` grouped by conversation, and their bare verdicts (same order)."""
    scored, bare = [], []
    for t in traces:
        v = t.verdict
        if v is None or v.probability is None or t.id not in truth:
            continue
        scored.append(Scored(float(v.probability), bool(truth[t.id]), t.session or t.id, t.id))
        bare.append(bool(v.violation))
    return scored, bare


JUDGES_WORDS, ACTIVATION_SCORER = "the judge's words", "activation scorer"


def score_aurocs(traces: Sequence[Any], truth: Mapping[str, bool],
                 setting: Any = None) -> dict[str, tuple[float, int]]:
    """One AUROC per score on a dataset's labelled cases, named: "the judge's words" (its
    verbal probability) and, when ``setting`` has an activation scorer, "activation scorer"
    (its outputs attached as ``case_scores``). Name -> (AUROC, cases it was measured on);
    a score known for no labelled case is left out. ``learn.auroc``, the one AUROC."""
    from workbench.decision.learn import auroc

    scores: dict[str, tuple[list[float], list[bool]]] = {}
    for t in traces:
        if t.id not in truth or t.verdict is None:
            continue
        found = {JUDGES_WORDS: t.verdict.probability}
        if setting is not None and getattr(setting, "scorer", None) is not None:
            found[ACTIVATION_SCORER] = setting.score_of(t.id, t.strategy)
        for name, value in found.items():
            if value is not None:
                s, y = scores.setdefault(name, ([], []))
                s.append(float(value))
                y.append(bool(truth[t.id]))
    return {name: (auroc(s, y), len(s)) for name, (s, y) in scores.items()}
