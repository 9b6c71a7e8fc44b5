"""Training labels from reviewed audits (``workbench train data --from-store DATASET``): the
verdicts analysts confirmed, overturned or marked "right verdict, wrong rule" on the Review
page (or with ``workbench review decide``), turned into the labels a judge should learn.

For each verdict (the newest judged trace of a case under the chosen strategy, as the
Review queue shows it), the analysts' current decisions (undone ones do not count) give
the label they say the reply has (``ReviewDecision.analyst_violation``: the analyst's own
label, stored with each decision; the meaning of the day for decisions made before it):

- **confirmed**: the label shown on the card is the label;
- **overturned**: the label is the opposite of the label shown;
- **right verdict, wrong rule**: the label shown is the label, and the record is marked
  ``wrong_rule`` (the rules it cited are not the ones broken, so the target verdict does not
  cite them; it cites the gold violated rules when the case has them);
- analysts who disagree with each other: the majority's label; a tie is left out.

**Unreviewed verdicts are left out by default**: an unchecked verdict of a small judge is
the very label the training should improve on. With ``unreviewed_weight > 0`` they are kept
with the judge's verdict as the label and that weight (reviewed records weigh 1), for
trainers that take a per-record weight. Pure Python: the command reads the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from workbench.review.decisions import WRONG_RULE
from workbench.review.queue import QueueItem, ReviewDecision, current_decisions
from workbench.vocabulary import Label

UNREVIEWED = "unreviewed"


@dataclass(frozen=True)
class ReviewedLabel:
    """The label one verdict's review gives, with how it was reached."""

    case_id: str
    strategy: str
    run_id: str
    label: str  # Label.NEGATIVE (violation) | Label.POSITIVE
    judge_violation: bool
    decision: str  # confirm | overturn | wrong-rule | mixed (analysts differ) | unreviewed
    reviewers: tuple[str, ...] = ()
    wrong_rule: bool = False
    cited_rules: tuple[str, ...] = ()  # what the judge cited
    weight: float = 1.0
    notes: tuple[str, ...] = ()

    @property
    def flipped(self) -> bool:
        """The label differs from the judge's verdict (the analysts overturned it)."""
        return (self.label == Label.NEGATIVE) != self.judge_violation

    def as_dict(self) -> dict:
        return {"decision": self.decision, "reviewers": list(self.reviewers),
                "judge_violation": self.judge_violation, "flipped": self.flipped,
                "wrong_rule": self.wrong_rule, "cited_rules": list(self.cited_rules),
                "run": self.run_id, "notes": list(self.notes)}


@dataclass
class ReviewedSet:
    labels: list[ReviewedLabel]
    left_out: Counter = field(default_factory=Counter)  # reason -> verdicts left out


def _label(violation: bool) -> str:
    return str(Label.NEGATIVE if violation else Label.POSITIVE)


def reviewed_labels(items: Sequence[QueueItem], decisions: Iterable[ReviewDecision], *,
                    unreviewed_weight: float = 0.0) -> ReviewedSet:
    """One :class:`ReviewedLabel` per item with a usable review (see the module doc).
    ``unreviewed_weight``: 0 leaves unreviewed verdicts out, else their weight (0 < w <= 1)."""
    if not 0.0 <= unreviewed_weight <= 1.0:
        raise ValueError(f"unreviewed_weight must be in [0, 1], got {unreviewed_weight}")
    by_item: dict[tuple, list[ReviewDecision]] = {}
    for (key, _who), d in current_decisions(decisions).items():
        by_item.setdefault(key, []).append(d)
    out = ReviewedSet([])
    for item in items:
        judge = item.violation
        if judge is None:
            out.left_out["no verdict"] += 1
            continue
        cited = tuple(item.trace.verdict.violated_rules) if item.trace.verdict else ()
        mine = by_item.get(item.key, [])
        if not mine:
            if unreviewed_weight > 0:
                out.labels.append(ReviewedLabel(item.case_id, item.strategy, item.run_id,
                                                _label(judge), judge, UNREVIEWED,
                                                cited_rules=cited, weight=unreviewed_weight))
            else:
                out.left_out["not reviewed"] += 1
            continue
        votes = Counter(bool(d.analyst_violation) for d in mine)
        if len(votes) > 1 and votes[True] == votes[False]:
            out.left_out["analysts split evenly"] += 1
            continue
        violation = votes.most_common(1)[0][0]
        side = [d for d in mine if bool(d.analyst_violation) == violation]
        kinds = {d.decision for d in side}
        decision = kinds.pop() if len(kinds) == 1 and len(side) == len(mine) else "mixed"
        out.labels.append(ReviewedLabel(
            item.case_id, item.strategy, item.run_id, _label(violation), judge, decision,
            tuple(sorted(d.reviewer for d in mine)),
            wrong_rule=any(d.decision == WRONG_RULE for d in side), cited_rules=cited,
            notes=tuple(d.note for d in side if d.note)))
    return out
