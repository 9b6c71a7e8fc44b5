"""Training labels from reviewed audits (``workbench train data --from-store DATASET``): the
verdicts analysts confirmed, overturned or marked "right verdict, wrong rule" on the Review
page (or with ``workbench review decide``), turned into the labels a judge should learn.

Each verdict is a review item (the newest judged trace of a case under the chosen strategy)
with its decided record (``workbench.decision.DecidedVerdict``, built under the dataset's
setting with its stored explanations: what the Review card shows); nothing here re-derives a
label from the judge's words. The analysts' current decisions (undone ones do not count) give
the label they say the reply has (``ReviewDecision.analyst_violation``: the analyst's own
label, stored with each decision; the meaning of the day for decisions made before it):

- **confirmed**: the label the decision stood on is the label (the record's label; on a card
  "to review", the outcome its score decided, as the card said);
- **overturned**: the label is the opposite of that;
- **right verdict, wrong rule**: the violation is the label, and the record is marked
  ``wrong_rule`` (the record's rules are not the ones broken, so the target verdict does not
  cite them; it cites the gold violated rules when the case has them);
- analysts who disagree with each other: the majority's label; a tie is left out.

**Unreviewed verdicts are left out by default**: an unchecked verdict of a small judge is
the very label the training should improve on. With ``unreviewed_weight > 0`` they are kept
with the record's label and that weight (reviewed records weigh 1), for trainers that take a
per-record weight; a record "to review" has no label to learn until an analyst gives one, so
an unreviewed one is always left out. Pure Python: the command reads the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from workbench.decision import REVIEW, VIOLATION
from workbench.review.decisions import WRONG_RULE
from workbench.review.queue import QueueItem, ReviewDecision, current_decisions, shown_stands
from workbench.vocabulary import Label

UNREVIEWED = "unreviewed"


@dataclass(frozen=True)
class ReviewedLabel:
    """The label one verdict's review gives, with how it was reached."""

    case_id: str
    strategy: str
    run_id: str
    label: str  # Label.NEGATIVE (violation) | Label.POSITIVE
    shown_violation: bool  # what the decided record stood for (see the module doc)
    decision: str  # confirm | overturn | wrong-rule | mixed (analysts differ) | unreviewed
    reviewers: tuple[str, ...] = ()
    wrong_rule: bool = False
    cited_rules: tuple[str, ...] = ()  # the decided record's rules (of the judged closure)
    weight: float = 1.0
    notes: tuple[str, ...] = ()
    shown: str = ""  # the decided record's label: violation | compliant | review

    @property
    def flipped(self) -> bool:
        """The label differs from the decided verdict (the analysts overturned it)."""
        return (self.label == Label.NEGATIVE) != self.shown_violation

    def as_dict(self) -> dict:
        return {"decision": self.decision, "reviewers": list(self.reviewers),
                "shown": self.shown, "shown_violation": self.shown_violation,
                "flipped": self.flipped, "wrong_rule": self.wrong_rule,
                "cited_rules": list(self.cited_rules), "run": self.run_id,
                "notes": list(self.notes)}


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
        record = item.verdict
        stands = shown_stands(record)
        if stands is None:
            out.left_out["no verdict"] += 1
            continue
        cited = record.rules
        mine = by_item.get(item.key, [])
        if not mine:
            if record.label == REVIEW:
                out.left_out["to review, not reviewed"] += 1
            elif unreviewed_weight > 0:
                out.labels.append(ReviewedLabel(
                    item.case_id, item.strategy, item.run_id,
                    _label(record.label == VIOLATION), stands, UNREVIEWED, cited_rules=cited,
                    weight=unreviewed_weight, shown=record.label))
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
            item.case_id, item.strategy, item.run_id, _label(violation), stands, decision,
            tuple(sorted(d.reviewer for d in mine)),
            wrong_rule=any(d.decision == WRONG_RULE for d in side), cited_rules=cited,
            notes=tuple(d.note for d in side if d.note), shown=record.label))
    return out
