"""Selective review: which verdicts are doubtful, which can be decided automatically, and the
plain words an analyst reads for a probability.

Every verdict with a probability gets a *decision* (``p >= threshold``: a violation) and a
*confidence* in it (the calibrated probability that the decision is right;
``workbench.audit.calibration.ThresholdSetting``). Without a saved setting the threshold is
0.5 and the probability is taken as it is, which the words say ("uncalibrated").

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

from workbench.audit.calibration import ThresholdSetting
from workbench.vocabulary import label_violation

T = TypeVar("T")
DEFAULT_SETTING = ThresholdSetting(0.5)
LIKELY = 0.8  # confidence from which a decision reads "likely"


@dataclass(frozen=True)
class Judgement:
    """A verdict's probability read through a threshold setting."""

    probability: float  # as the judge gave it
    calibrated: float  # P(violation) after calibration (= probability without one)
    decided_violation: bool
    confidence: float  # P(the decision is right)
    calibrated_by: str  # "" (none) or "Platt"

    @property
    def uncertainty(self) -> float:
        return 1.0 - self.confidence


def judgement(verdict: Any, setting: ThresholdSetting | None = None) -> Judgement | None:
    """How ``setting`` reads ``verdict``'s probability; None when it has none."""
    p = getattr(verdict, "probability", None)
    if p is None:
        return None
    s = setting or DEFAULT_SETTING
    q = s.calibrated(p)
    decided = s.decide(p)
    return Judgement(float(p), q, decided, q if decided else 1.0 - q,
                     "Platt" if s.calibration else "")


def probability_words(verdict: Any, setting: ThresholdSetting | None = None) -> str:
    """"likely violation — 83 %", "possible violation — 58 %", "likely compliant — 91 %" (the
    probability of the outcome named), or "" without a probability."""
    j = judgement(verdict, setting)
    if j is None:
        return ""
    word = "violation" if j.decided_violation else "compliant"
    strength = "likely" if j.confidence >= LIKELY else ("possible" if j.decided_violation else "probably")
    pct = round(100 * j.confidence)
    return f"{strength} {word} — {pct} %" + ("" if j.calibrated_by else " (uncalibrated)")


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
            correct += truth == j.decided_violation
    return AutoDecidePreview(min_confidence, decided, to_review, labelled, correct)
