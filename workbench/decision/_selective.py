"""Selective review: which decisions are most in doubt, and what "auto-decide above
confidence c" would do before it is applied. Confidence is the calibrated probability that a
decision is right (``_decide.judgement``); verdicts without a score under the setting are
left to people.

- :func:`order_by_uncertainty`: least confident first; items without a score last, in their
  given order.
- :func:`auto_decide_preview`: how many cases it decides, how many it sends to review, and
  the accuracy it had on the labelled ones among them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from workbench.decision._decide import DecisionSetting, judgement
from workbench.vocabulary import label_violation

T = TypeVar("T")


def order_by_uncertainty(items: Sequence[T], verdict_of: Callable[[T], Any],
                         setting: DecisionSetting | None = None) -> list[T]:
    """``items`` least confident first (stable); items without a score last."""
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
    setting: DecisionSetting | None = None, gold: Callable[[T], Any] | None = None,
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
