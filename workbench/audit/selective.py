"""Selective review: which verdicts are doubtful, which can be decided automatically, and the
plain words an analyst reads for a probability.

Every verdict with a score gets a *decision* and a *confidence* in it (the calibrated
probability that the decision is right), both from ``workbench.decision.decide`` — the one
place the rule is written. Without a saved setting the threshold is 0.5 and the probability
is taken as it is, which the words say ("uncalibrated").

- :func:`order_by_uncertainty`: least confident first; verdicts without a probability last,
  in their given order.
- :func:`auto_decide_preview`: what "auto-decide above confidence c" would do, before it is
  applied: how many cases it decides, how many it sends to review, and the accuracy it had
  on the labelled ones among them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from workbench.decision.decide import DEFAULT_SETTING, Decided, DecisionSetting, decide
from workbench.vocabulary import label_violation

T = TypeVar("T")
ThresholdSetting = DecisionSetting  # the name callers of this module knew
LIKELY = 0.8  # confidence from which a decision reads "likely"
Judgement = Decided  # a verdict read through a setting: workbench.decision.decide.Decided


def judgement(verdict: Any, setting: DecisionSetting | None = None,
              activation: float | None = None) -> Decided | None:
    """How ``setting`` decides ``verdict`` (its probability, or ``activation``: the setting's
    scorer's output for the case); None when the setting's score is unknown for it. Given a
    trace instead of a verdict, the activation score comes from the setting's
    ``case_scores`` for that trace's case and strategy."""
    s = setting or DEFAULT_SETTING
    if hasattr(verdict, "verdict") and hasattr(verdict, "strategy"):  # an AuditTrace
        trace = verdict
        verdict = trace.verdict
        if activation is None:
            activation = s.score_of(trace.id, trace.strategy)
    p = getattr(verdict, "probability", None)
    if s.scorer is not None and activation is None:
        return None
    if s.scorer is None and p is None:
        return None
    return decide(s, probability=p, activation=activation)


def probability_words(verdict: Any, setting: DecisionSetting | None = None,
                      activation: float | None = None) -> str:
    """"likely violation — 83 %", "possible violation — 58 %", "probably compliant — 65 %",
    "likely compliant — 91 %" (the probability of the outcome named), or "" without a score.
    One band per range: "likely" from :data:`LIKELY`, else "possible" (violation) /
    "probably" (compliant)."""
    j = judgement(verdict, setting, activation)
    if j is None:
        return ""
    return decision_words(j)


def decision_words(j: Decided) -> str:
    word = "violation" if j.violation else "compliant"
    pct = round(100 * j.confidence)
    # the band follows the number shown, so two rows reading "80 %" never differ in words
    strength = "likely" if pct >= round(100 * LIKELY) else ("possible" if j.violation else "probably")
    return f"{strength} {word} — {pct} %" + ("" if j.calibrated else " (uncalibrated)")


def order_by_uncertainty(items: Sequence[T], verdict_of: Callable[[T], Any],
                         setting: ThresholdSetting | None = None) -> list[T]:
    """``items`` least confident first (stable); items without a probability last."""
    def key(pair: tuple[int, T]) -> tuple[int, float, int]:
        j = judgement(verdict_of(pair[1]), setting)
        return (1, 0.0, pair[0]) if j is None else (0, j.confidence, pair[0])

    return [item for _, item in sorted(enumerate(items), key=key)]


@dataclass(frozen=True)
class AutoDecidePreview:
    min_confidence: float
    decided: int  # cases it would decide (confidence >= min_confidence)
    to_review: int  # cases left for people (below it, or without a probability)
    labelled: int  # decided cases with a gold answer
    correct: int  # of those, decided right

    @property
    def accuracy(self) -> float:
        return self.correct / self.labelled if self.labelled else float("nan")

    @property
    def coverage(self) -> float:
        total = self.decided + self.to_review
        return self.decided / total if total else float("nan")


def auto_decide_preview(
    items: Iterable[T], verdict_of: Callable[[T], Any], min_confidence: float,
    setting: ThresholdSetting | None = None, gold: Callable[[T], Any] | None = None,
) -> AutoDecidePreview:
    """What deciding every case at or above ``min_confidence`` would do. ``gold(item)``: the
    item's label (``negative``/``positive``) or None, for the accuracy measured on labels."""
    if not 0.5 <= min_confidence <= 1.0:
        raise ValueError(f"a confidence to auto-decide at is between 0.5 and 1, not {min_confidence}")
    decided = to_review = labelled = correct = 0
    for item in items:
        j = judgement(verdict_of(item), setting)
        if j is None or j.confidence < min_confidence:
            to_review += 1
            continue
        decided += 1
        truth = label_violation(gold(item)) if gold is not None else None
        if truth is not None:
            labelled += 1
            correct += truth == j.violation
    return AutoDecidePreview(min_confidence, decided, to_review, labelled, correct)
