"""Labels where they teach most, and how many more a promise needs (issue 57 item 5).

**Which cases to label next** (:func:`propose`): those the current scorer is least sure of
(calibrated probability closest to the decision threshold), spread so that one batch does
not spend its labels on one conversation or one SKILL: a first pass takes at most one case
per conversation, SKILLs taken in turn; later passes fill up. A label on a case the scorer
already decides with confidence teaches it little; one near the threshold moves it most, and
labels from many conversations and SKILLs keep a policy's scorer from learning one
conversation's quirks.

**How many labels a promise needs** (:func:`labels_needed`): the auto-decide guarantee
(``_guarantee``) tests, at each of ``levels`` confidence levels, whether the error rate of
the cases decided automatically there is at most α, at ``δ / levels`` (Bonferroni). With the
error rate ``e`` seen so far among the cases the level would decide (``e < α``), a level can
pass once it holds ``n`` cases with ``floor(e n)`` errors where ``P(Binomial(n, α) <=
floor(e n)) <= δ / levels``; at a coverage ``c`` that takes ``n / c`` labelled cases. With
``e = 0``, α = 0.10, δ = 0.05 and 10 levels that is 51 auto-decided cases (``0.9^51 < 0.005``).

**A promise that needs fewer** (:func:`split_scores_guarantee`): split the labelled cases by
conversation into halves; on the first, fit the calibration and choose the level (the lowest
whose error there is at most α/2); on the second, decide with that calibration and certify
the level with a single binomial test at δ. Nothing of the certifying half — not its labels,
not a calibration fitted on them — is used before the test, so no correction is owed: the
promise is the same (the error rate of the automatic decisions is at most α, with
probability at least 1 − δ), and with no error it needs 29 certifying cases at α = 0.10,
δ = 0.05 (``0.9^29 < 0.05``) instead of 51. :func:`split_guarantee` is the same test on
confidences already calibrated; it is clean only when they were calibrated without the
certifying half's labels.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.decision._guarantee import (
    DEFAULT_DELTA,
    GRID,
    Guarantee,
    binom_pvalue,
    smallest_testable,
    upper_bound,
)


@dataclass(frozen=True)
class Candidate:
    """A case that could be labelled: its key, conversation, SKILL and the current
    calibrated P(violation) (None: no score, least known of all)."""

    key: tuple[str, ...]
    conversation: str
    skill: str
    probability: float | None


def propose(candidates: Sequence[Candidate], k: int, threshold: float = 0.5) -> list[Candidate]:
    """The ``k`` cases to label next (see the module doc)."""
    def doubt(c: Candidate) -> float:
        return 0.0 if c.probability is None else abs(float(c.probability) - threshold)

    by_skill: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(candidates, key=lambda c: (doubt(c), c.key)):
        by_skill[c.skill].append(c)
    skills = sorted(by_skill, key=lambda s: (doubt(by_skill[s][0]), s))
    picked: list[Candidate] = []
    seen_conv: set[str] = set()
    taken: set[tuple[str, ...]] = set()
    for first_pass in (True, False):
        progress = True
        while len(picked) < k and progress:
            progress = False
            for skill in skills:
                for c in by_skill[skill]:
                    if c.key in taken or (first_pass and c.conversation in seen_conv):
                        continue
                    picked.append(c)
                    taken.add(c.key)
                    seen_conv.add(c.conversation)
                    progress = True
                    break
                if len(picked) >= k:
                    break
    return picked


@dataclass(frozen=True)
class Forecast:
    """How many labelled cases a promise at ``alpha`` needs (None: it cannot pass at the
    error rate seen: ``error_rate >= alpha``)."""

    alpha: float
    delta: float
    error_rate: float
    coverage: float
    auto_needed: int | None  # cases the level must decide automatically
    labels_needed: int | None  # labelled cases in all, at ``coverage``
    more: int | None  # beyond those labelled already


def auto_cases_needed(alpha: float, delta: float, error_rate: float, tests: int = 1,
                      limit: int = 100_000) -> int | None:
    """The fewest cases decided automatically at error rate ``error_rate`` with which the
    binomial test at ``delta / tests`` can pass (None: never, ``error_rate >= alpha``)."""
    if not 0 < alpha < 1 or not 0 < delta < 1:
        raise ValueError("alpha and delta must be between 0 and 1")
    if error_rate >= alpha:
        return None
    at = delta / tests
    n = max(1, smallest_testable(alpha, at) if error_rate == 0 else 1)
    while n <= limit:
        if binom_pvalue(math.floor(error_rate * n), n, alpha) <= at:
            return n
        n += 1 if n < 200 else max(1, n // 50)
    return None


def labels_needed(alpha: float, error_rate: float, coverage: float, have: int = 0,
                  delta: float = DEFAULT_DELTA, tests: int = len(GRID)) -> Forecast:
    """The labelled cases the promise needs (see the module doc); ``coverage``: the share of
    cases the level would decide automatically, ``have``: labelled already."""
    auto = auto_cases_needed(alpha, delta, error_rate, tests)
    if auto is None or coverage <= 0:
        return Forecast(alpha, delta, error_rate, coverage, auto, None, None)
    total = math.ceil(auto / coverage)
    return Forecast(alpha, delta, error_rate, coverage, auto, total, max(0, total - have))


def _choosing_half(groups: Sequence[str], seed: int) -> np.ndarray:
    """For each case, whether its conversation is in the half that chooses the level (half
    the conversations, drawn with ``seed``); the rest certify it."""
    uniq = sorted(set(groups))
    rng = np.random.default_rng(seed)
    half = set(uniq[i] for i in rng.permutation(len(uniq))[: len(uniq) // 2])
    return np.array([g in half for g in groups])


def _choose_and_certify(ca: np.ndarray, oka: np.ndarray, cb: np.ndarray, okb: np.ndarray,
                        alpha: float, delta: float, cases: int) -> Guarantee:
    """The lowest level whose error on the choosing half (confidences ``ca``, right ``oka``)
    is at most alpha/2, certified on the other half (``cb``, ``okb``) by one binomial test at
    ``delta``; no level when none is chosen or it fails. ``cases`` counts all."""
    level = None
    if len(ca):
        ranked = np.sort(ca)[::-1]
        for share in GRID:  # the lowest level whose error on the choosing half is <= alpha/2
            lam = float(ranked[max(0, round(share * len(ca)) - 1)])
            above = ca >= lam - 1e-12
            if above.any() and (~oka[above]).mean() <= alpha / 2:
                level = lam
    none = Guarantee(alpha, delta, None, 0.0, 0, 0, 1.0, cases)
    if level is None or not len(cb):
        return none
    above = cb >= level - 1e-12
    n, k = int(above.sum()), int((~okb[above]).sum())
    if n == 0 or binom_pvalue(k, n, alpha) > delta:
        return none
    return Guarantee(alpha, delta, level, n / len(cb), k, n, upper_bound(k, n, delta), cases)


def split_guarantee(confidences: Sequence[float], correct: Sequence[bool],
                    groups: Sequence[str], alpha: float, delta: float = DEFAULT_DELTA,
                    seed: int = 0) -> Guarantee:
    """The level chosen on one half of the conversations and certified on the other (see the
    module doc). ``coverage``, ``errors``, ``decided`` and ``bound`` are the certifying
    half's; ``cases`` counts all."""
    c = np.asarray(confidences, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    pick = _choosing_half(groups, seed)
    return _choose_and_certify(c[pick], ok[pick], c[~pick], ok[~pick], alpha, delta, len(c))


def split_scores_guarantee(scores: Sequence[float], truth: Sequence[bool], groups: Sequence[str],
                           threshold: float, alpha: float, delta: float = DEFAULT_DELTA,
                           seed: int = 0) -> Guarantee:
    """The split guarantee from raw scores (see the module doc): calibration and level from
    one half of the conversations, certified on the other."""
    from workbench.decision._calibration import fit_monotone
    from workbench.decision._decide import confidence_of, violates_each

    s = np.asarray(scores, dtype=float)
    y = np.asarray(truth, dtype=bool)
    pick = _choosing_half(groups, seed)
    cal = fit_monotone(s[pick], y[pick]) if pick.any() else None
    if cal is None or not (~pick).any():
        return Guarantee(alpha, delta, None, 0.0, 0, 0, 1.0, len(s))
    qa = np.array([cal(v) for v in s[pick]])
    qb = np.array([cal(v) for v in s[~pick]])
    da, db = violates_each(qa, threshold), violates_each(qb, threshold)
    ca, cb = confidence_of(qa, da), confidence_of(qb, db)
    return _choose_and_certify(ca, da == y[pick], cb, db == y[~pick], alpha, delta, len(s))
