"""The figures every fit and every surface reports, each computed one way: right and wrong
counted (:class:`Counts`), accuracy of the most confident share, the reliability table, the
risk–coverage curve and the precision/recall/F1 of every threshold. The AUROC and the grouped
fold splitter are :mod:`workbench.decision.learn`'s (``auroc``, ``grouped_splits``): one each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.decision._decide import violates

_EPS = 1e-4


@dataclass(frozen=True)
class Counts:
    """Right and wrong of yes/no decisions against the truth (violation = the positive)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else 0.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else float("nan")


def counts(decided: Sequence[bool], truth: Sequence[bool]) -> Counts:
    """:class:`Counts` of ``decided`` against ``truth`` (same length)."""
    decided, truth = [bool(d) for d in decided], [bool(t) for t in truth]
    tp = sum(d and t for d, t in zip(decided, truth, strict=True))
    fp = sum(d and not t for d, t in zip(decided, truth, strict=True))
    fn = sum(t and not d for d, t in zip(decided, truth, strict=True))
    return Counts(tp, fp, fn, len(truth) - tp - fp - fn)


def candidate_thresholds(probabilities: Sequence[float]) -> list[float]:
    """Midpoints between consecutive distinct probabilities, plus the ends: every way to
    split the cases by a threshold, each once."""
    ps = sorted(set(round(float(p), 6) for p in probabilities))
    if not ps:
        return [0.5]
    mids = [(a + b) / 2 for a, b in zip(ps, ps[1:], strict=False)]
    return [max(0.0, ps[0] - _EPS), *mids, min(1.0, ps[-1] + _EPS)]


def best_threshold(probabilities: Sequence[float], truth: Sequence[bool]) -> float:
    """The threshold with the best violation-F1 (ties: the one nearest 0.5). Reported for
    comparison only: on balanced data it drifts to "flag everything"."""
    best: tuple[float, float, float] | None = None
    for t in candidate_thresholds(probabilities):
        f1 = counts([violates(p, t) for p in probabilities], truth).f1
        key = (f1, -abs(t - 0.5))
        if best is None or key > best[:2]:
            best = (*key, t)
    return round(best[2], 6) if best else 0.5


def threshold_curve(probabilities: Sequence[float], truth: Sequence[bool]) -> list[dict[str, float]]:
    """Precision, recall and F1 of deciding at each threshold, for every distinct split."""
    rows = []
    for t in candidate_thresholds(probabilities):
        c = counts([violates(p, t) for p in probabilities], truth)
        rows.append({"threshold": round(t, 6), "precision": c.precision, "recall": c.recall,
                     "f1": c.f1, "decided_violation": c.tp + c.fp})
    return rows


def reliability(probabilities: Sequence[float], truth: Sequence[bool],
                bins: int = 10) -> list[dict[str, float]]:
    """Equal-width bins of the probability: mean probability, share of true violations, count."""
    rows = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [(p, t) for p, t in zip(probabilities, truth, strict=True)
                  if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if inside:
            rows.append({"bin_low": lo, "bin_high": hi,
                         "mean_probability": float(np.mean([p for p, _ in inside])),
                         "violation_rate": float(np.mean([t for _, t in inside])),
                         "cases": len(inside)})
    return rows


def risk_coverage(confidences: Sequence[float], correct: Sequence[bool]) -> list[dict[str, float]]:
    """Accuracy of the most confident share of cases, for each share (most confident first;
    ties kept together)."""
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    rows, right = [], 0
    for n, i in enumerate(order, 1):
        right += bool(correct[i])
        last = n == len(order) or confidences[order[n]] != confidences[i]
        if last:
            rows.append({"coverage": n / len(order), "accuracy": right / n, "cases": n,
                         "min_confidence": confidences[i]})
    return rows


def accuracy_at_coverage(confidences: Sequence[float], correct: Sequence[bool], share: float) -> float:
    """Accuracy of the ``share`` most confident cases (at least one).

    When the cut falls inside a group of equal confidences, the group's places are filled at
    its mean accuracy (the expectation over every way of breaking the tie), so the figure does
    not depend on the order the cases came in: a judge that gives every case the same
    confidence scores its overall accuracy, not that of whichever cases happened to be first."""
    if not len(confidences):
        return float("nan")
    k = max(1, round(share * len(confidences)))
    cut = sorted(confidences, reverse=True)[k - 1]
    above = [bool(r) for c, r in zip(confidences, correct, strict=True) if c > cut]
    tied = [bool(r) for c, r in zip(confidences, correct, strict=True) if c == cut]
    return (sum(above) + (k - len(above)) * sum(tied) / len(tied)) / k
