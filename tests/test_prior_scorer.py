"""The built-in scorer and the adaptation that starts from it (issue 57 item 3): the
penalty centred on the prior's weights, checked on data small enough to solve by hand, and
the choice that keeps the built-in scorer unless the labels show, out of fold, that an adapted
one ranks better."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.decision._prior import adapt, fit_prior_probe
from workbench.decision.scorers import Probe


def _prior(w: float, d: int = 1) -> Probe:
    return Probe(20, np.zeros(d), np.ones(d), np.full(d, w), 0.0, 0.1)


def _solve(w0: float, lam: float) -> float:
    """The optimum of two cases z = +1 (violation) and z = -1 (compliant) under the penalty
    lam/2 (w - w0)^2, by bisection. By symmetry the bias is 0 and sigma(-w) = 1 - sigma(w), so
    the gradient is 2 (sigma(w) - 1) + lam (w - w0) = 0."""
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        g = 2 * (1 / (1 + math.exp(-mid)) - 1) + lam * (mid - w0)
        lo, hi = (mid, hi) if g < 0 else (lo, mid)
    return (lo + hi) / 2


@pytest.mark.parametrize("w0, c, want", [
    # by hand: lam = 1, w0 = 0: w = 2 (1 - sigma(w)) -> w = 0.6749 (sigma(0.6749) = 0.6626)
    (0.0, 1.0, 0.6749),
    # w0 = 1: w - 1 = 2 (1 - sigma(w)) -> w = 1.3966 (sigma(1.3966) = 0.8017): pulled to the prior
    (1.0, 1.0, 1.3966),
])
def test_the_penalty_pulls_the_weights_towards_the_prior_not_towards_zero(w0, c, want):
    x = np.array([[1.0], [-1.0]])
    fit = fit_prior_probe(x, [True, False], _prior(w0), c)
    assert fit.weights[0] == pytest.approx(want, abs=2e-3)
    assert fit.weights[0] == pytest.approx(_solve(w0, 1 / c), abs=2e-3)
    assert fit.bias == pytest.approx(0.0, abs=1e-3)


def test_a_tiny_c_gives_the_prior_back_and_a_large_one_follows_the_labels():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    y = x[:, 2] > 0  # the labels say feature 2; the prior says feature 0
    prior = Probe(20, np.zeros(3), np.ones(3), np.array([2.0, 0.0, 0.0]), 0.0, 0.1)
    stay = fit_prior_probe(x, y, prior, 1e-6)
    assert np.allclose(stay.weights, prior.weights, atol=1e-3)
    moved = fit_prior_probe(x, y, prior, 100.0)
    assert moved.weights[2] > 2.0 and abs(moved.weights[0]) < 2.0


def _data(n_groups: int, per: int, signal: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    groups = [f"g{i}" for i in range(n_groups) for _ in range(per)]
    y = np.array([(i % 2 == 0) for i in range(len(groups))])
    x = rng.normal(size=(len(groups), 4))
    x[:, signal] += np.where(y, 1.5, -1.5)
    return x, y, groups


def test_few_labels_keep_the_builtin_scorer_and_many_that_disagree_replace_it():
    prior = Probe(20, np.zeros(4), np.ones(4), np.array([1.0, 0, 0, 0]), 0.0, 0.1)
    # 20 labels where the prior's own feature carries the answer: nothing to gain, it stays
    x, y, g = _data(10, 2, signal=0)
    kept = adapt(x, y, g, prior)
    assert not kept.replaced and kept.scorer is prior and kept.builtin_auroc > 0.8
    # 120 labels that say another feature: the adapted scorer ranks better, and replaces it
    x, y, g = _data(40, 3, signal=3)
    moved = adapt(x, y, g, prior)
    assert moved.replaced and moved.adapted_auroc > moved.builtin_auroc + 0.2
    assert moved.p_better >= 0.9 and moved.scorer.weights[3] > 0.5
    # too few of one answer to cross-validate: the built-in stays, saying so
    few = adapt(x[:6], y[:6], g[:6], prior)
    assert not few.replaced and math.isnan(few.adapted_auroc)


def test_a_policys_setting_starts_from_the_builtin_and_is_calibrated_on_its_own_scores():
    from workbench.decision import DecisionSetting, fit_adapted_setting
    from workbench.decision.learn import Labelled

    prior = Probe(20, np.zeros(4), np.ones(4), np.array([1.0, 0, 0, 0]), 0.0, 0.1)
    builtin = DecisionSetting(threshold=0.5, scorer=prior.to_dict(), fitted_on={"builtin": True})
    x, y, g = _data(10, 2, signal=0)
    data = Labelled([f"c{i}" for i in range(len(y))], g, y, [None] * len(y), x[:, None, :], (20,))
    s = fit_adapted_setting(data, builtin)
    assert s.scorer == prior.to_dict()  # 20 labels that agree with it: the built-in stays
    assert s.fitted_on["prior"] == "built-in" and not s.cross_validated["replaced"]
    assert s.calibration is not None and s.calibration["a"] > 0 and s.ranks
    assert s.cross_validated["auroc"] == pytest.approx(s.cross_validated["builtin_auroc"])
    with pytest.raises(ValueError):  # a prior over a feature these cases do not hold
        fit_adapted_setting(Labelled(data.ids, g, y, data.verbal, data.x, (22,)), builtin)
