"""Calibration that cannot run backwards: Platt scaling with a slope that is never negative.

``calibrated(s) = sigmoid(a * s + b)`` with ``a >= 0``, fitted by maximum likelihood on
(score, answer) pairs. When the unconstrained fit would take a negative slope (the score ranks
violations *below* compliant cases on these labels), the slope is held at 0: every case gets
the base rate, the order of cases is never inverted, and :attr:`Monotone.ranks` is False so
the page and the auto-decide step can say plainly that this score does not rank cases here.

Scores are on any scale: a verbal probability is turned into its log-odds first
(:func:`workbench.decision.scorers.logit`), an activation score is used as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_PER_ANSWER = 5


@dataclass(frozen=True)
class Monotone:
    a: float  # slope, >= 0
    b: float

    def __post_init__(self) -> None:
        if not self.a >= 0:  # also refuses NaN
            raise ValueError(f"a calibration slope must be >= 0, got {self.a}")

    @property
    def ranks(self) -> bool:
        return self.a > 0

    def __call__(self, score: float) -> float:
        z = self.a * float(score) + self.b
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def fit_monotone(scores: Sequence[float], truth: Sequence[bool], l2: float = 1e-3) -> Monotone | None:
    """The maximum-likelihood ``(a >= 0, b)``; None with fewer than :data:`MIN_PER_ANSWER`
    cases of either answer (too few to fit honestly)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(truth, dtype=float)
    if y.sum() < MIN_PER_ANSWER or len(y) - y.sum() < MIN_PER_ANSWER:
        return None
    from scipy.optimize import minimize

    mu, sd = float(s.mean()), float(s.std()) or 1.0
    z = (s - mu) / sd

    def nll(p: np.ndarray) -> float:
        t = p[0] * z + p[1]
        return float(np.sum(np.logaddexp(0.0, t) - y * t) + l2 * p[0] ** 2)

    base = math.log(max(y.mean(), 1e-6) / max(1 - y.mean(), 1e-6))
    res = minimize(nll, x0=np.array([0.0, base]), method="L-BFGS-B",
                   bounds=[(0.0, None), (None, None)])
    a_z, b_z = float(res.x[0]), float(res.x[1])
    # back to the raw score's scale: a_z * (s - mu) / sd + b_z
    return Monotone(a_z / sd, b_z - a_z * mu / sd)
