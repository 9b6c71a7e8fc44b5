"""Auto-decide with a guaranteed error rate (learn-then-test with a binomial bound).

The analyst chooses α (the largest share of wrong automatic decisions they accept) and δ
(how often that promise may fail, 0.05 by default). Candidate confidence levels λ are set
from the confidences alone, before any label is looked at: the levels that would decide
10 %, 20 %, …, 100 % of the labelled cases automatically (:data:`GRID`). At each, with ``k``
of the ``n`` cases at or above λ wrong, the binomial p-value ``P(Binomial(n, α) <= k)``
tests "the error rate above λ exceeds α"; each test is run at ``δ / len(grid)`` (Bonferroni:
the chance that *any* promise is false stays below δ), and the lowest rejected level — the
most coverage — is used. A fixed-sequence test from the strictest level was tried first and
refused too often: its first levels hold so few cases that one error stops the sequence.
Coverage is the share decided automatically there; every other case goes to a person. If no
level is rejected, nothing is auto-decided.

Confidence is the calibrated probability that the decision is right (``q`` for a violation,
``1 - q`` for a compliant decision; see :mod:`workbench.decision.decide`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.decision._decide import automatic_each

DEFAULT_DELTA = 0.05
MIN_AUTO = 10  # never promise anything from fewer auto-decided cases
GRID = tuple(i / 10 for i in range(1, 11))  # coverages whose levels are tested


def smallest_testable(alpha: float, delta: float) -> int:
    """The fewest cases in which even zero errors rejects "error > α" at δ:
    ``(1 - α)^n <= δ``. Levels holding fewer cases cannot pass and are not tested (a choice
    made from the confidences alone, before any label is looked at)."""
    import math

    return max(MIN_AUTO, math.ceil(math.log(delta) / math.log(1 - alpha)))


@dataclass(frozen=True)
class Guarantee:
    alpha: float
    delta: float
    level: float | None  # confidence at or above which a case is decided automatically
    coverage: float  # share of the labelled cases decided automatically
    errors: int  # wrong among them
    decided: int  # how many were decided automatically
    bound: float  # the (1 - delta) upper bound of the error rate above ``level``
    cases: int

    @property
    def empirical_error(self) -> float:
        return self.errors / self.decided if self.decided else float("nan")


def binom_pvalue(errors: int, n: int, alpha: float) -> float:
    """``P(Binomial(n, alpha) <= errors)``: small when the error rate is likely below α."""
    from scipy.stats import binom

    return float(binom.cdf(errors, n, alpha))


def upper_bound(errors: int, n: int, delta: float) -> float:
    """Clopper–Pearson one-sided (1 - δ) upper bound of an error rate."""
    if n == 0:
        return 1.0
    if errors >= n:
        return 1.0
    from scipy.stats import beta

    return float(beta.ppf(1 - delta, errors + 1, n - errors))


def choose_level(confidences: Sequence[float], correct: Sequence[bool], alpha: float,
                 delta: float = DEFAULT_DELTA) -> Guarantee:
    """The lowest confidence level whose auto-decided error rate is ≤ α with probability
    1 - δ (see the module doc)."""
    if not 0 < alpha < 1 or not 0 < delta < 1:
        raise ValueError("alpha and delta must be between 0 and 1")
    c = np.asarray(confidences, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    n_all = len(c)
    ranked = np.sort(c)[::-1]
    least = smallest_testable(alpha, delta / len(GRID))
    levels = sorted({float(ranked[max(0, round(share * n_all) - 1)]) for share in GRID
                     if round(share * n_all) >= least}, reverse=True)
    chosen: tuple[float, int, int] | None = None
    for lam in levels:
        above = automatic_each(c, lam - 1e-12)
        n = int(above.sum())
        k = int((~ok[above]).sum())
        if binom_pvalue(k, n, alpha) <= delta / len(GRID):
            chosen = (lam, n, k)  # levels descend: the last rejected is the lowest
    if chosen is None:
        return Guarantee(alpha, delta, None, 0.0, 0, 0, 1.0, n_all)
    lam, n, k = chosen
    return Guarantee(alpha, delta, float(lam), n / n_all if n_all else 0.0, k, n,
                     upper_bound(k, n, delta / len(GRID)), n_all)


def realised(confidences: Sequence[float], correct: Sequence[bool],
             level: float | None) -> tuple[float, float]:
    """(coverage, error rate among the auto-decided) of ``level`` on other cases."""
    if level is None:
        return 0.0, float("nan")
    c = np.asarray(confidences, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    above = automatic_each(c, level - 1e-9)
    n = int(above.sum())
    return n / len(c) if len(c) else 0.0, (float((~ok[above]).mean()) if n else float("nan"))
