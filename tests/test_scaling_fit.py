"""Law families and maximum-likelihood fitting: hand values, gradients, recovery of known
parameters, and the additive model against statsmodels' logistic regression."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.scaling_data import two_datasets
from workbench.scaling import (
    FitError,
    FitOptions,
    Problem,
    fit_model,
    get_law,
    true_probability,
)
from workbench.scaling.fit import softplus, weighted_median
from workbench.scaling.laws import Design
from workbench.scaling.simulate import RECOVERY_SIZES, RECOVERY_TRUTH

QUICK = FitOptions(maxiter=120)
SIZES, TRUTH = RECOVERY_SIZES, RECOVERY_TRUTH


def test_full_logit_hand_value():
    # gamma=0.5, eta=1, beta=2, rho=0.5, alpha=1, lambda=ln 2 at N=2, Ct=1:
    # 0.5 - 1 + 2 * (1 - exp(-0.5 * 2)) * exp(-ln 2) = -0.5 + (1 - e^-1) = 0.1321205588...
    theta = np.array([0.5, 1.0, 2.0, 0.5, 1.0, math.log(2)])
    design = Design(np.array([0]), np.array([2.0]), np.array([1.0]))
    z = get_law("full").logit(theta, design, 1)
    assert z[0] == pytest.approx(-0.5 + (1 - math.exp(-1)), abs=1e-12)
    # nested drops the damping: -0.5 + 2 * (1 - e^-1)
    z = get_law("nested").logit(theta[:5], design, 1)
    assert z[0] == pytest.approx(-0.5 + 2 * (1 - math.exp(-1)), abs=1e-12)
    # additive: gamma + a ln N + b Ct = 0.5 + 1 * ln 2 + 2 * 1
    z = get_law("additive").logit(np.array([0.5, 1.0, 2.0]), design, 1)
    assert z[0] == pytest.approx(0.5 + math.log(2) + 2.0, abs=1e-12)


@pytest.mark.parametrize("model", ["full", "nested", "additive"])
def test_jacobian_matches_finite_differences_and_population_matches_loop(model):
    rng = np.random.default_rng(1)
    family = get_law(model)
    design = Design(rng.integers(0, 2, 40), rng.choice(SIZES, 40), rng.random(40) * 3)
    theta = np.array([-0.3, 0.4] + [0.7, 1.3, 0.6, 0.8, 0.4][: len(family.family_params)])
    jac = family.jacobian(theta, design, 2)
    h = 1e-6
    for j in range(theta.size):
        step = np.zeros_like(theta)
        step[j] = h
        numeric = family.logit(theta + step, design, 2) - family.logit(theta - step, design, 2)
        np.testing.assert_allclose(jac[:, j], numeric / (2 * h), rtol=1e-6, atol=1e-8)
    population = np.column_stack([theta, theta * 1.1, theta * 0.9])
    together = family.logit(population, design, 2)
    for s in range(3):
        np.testing.assert_allclose(together[:, s], family.logit(population[:, s], design, 2))


def test_softplus_and_weighted_median():
    z = np.array([-800.0, -3.0, 0.0, 2.5, 800.0])
    np.testing.assert_allclose(softplus(z), np.logaddexp(0, z), rtol=1e-15, atol=0)
    values = np.array([3.0, 1.0, 2.0, 10.0])
    weights = np.array([2, 1, 0, 1])
    # expansion [1, 3, 3, 10] -> median (3 + 3) / 2; with weight 3 on 10 -> [1,3,3,10,10,10] -> 6.5
    assert weighted_median(values, weights) == np.median([1, 3, 3, 10])
    assert weighted_median(values, np.array([2, 1, 0, 3])) == np.median([1, 3, 3, 10, 10, 10])
    assert weighted_median(values, np.array([1, 1, 1, 0])) == 2.0


@pytest.mark.parametrize("model", ["full", "nested", "additive"])
def test_fit_recovers_predicted_probabilities(model):
    """200 sessions x 20 instances x 7 judge sizes x 2 datasets (56,000 rows, integer
    complexities so the fit runs on ~1,000 patterns). Checked over sizes x complexity
    quantiles 5-95% x datasets against the generating model."""
    truth = TRUTH[model]
    data = two_datasets(model, truth, SIZES, sessions=200, instances=20, seed=11)
    fit = fit_model(data, model, QUICK)
    cs = np.quantile(data["complexity"], [0.05, 0.25, 0.5, 0.75, 0.95])
    d, n, c = np.meshgrid(np.array(["A", "B"], dtype=object), SIZES, cs, indexing="ij")
    error = np.abs(fit.predict(d, n, c) - true_probability(model, truth, ["A", "B"], d, n, c))
    assert error.max() < 0.03, f"max |P_hat - P| = {error.max():.4f}"


def test_additive_matches_statsmodels_logit():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(5)
    data = two_datasets("additive", TRUTH["additive"], [1.0, 3.0, 8.0, 30.0],
                        sessions=30, instances=8, seed=5)
    data["complexity"] = data["complexity"] + data["instance"].map(
        {i: rng.random() for i in data["instance"].unique()}
    )  # continuous complexities: no two rows share a pattern by accident
    fit = fit_model(data, "additive", QUICK)
    ct = data["complexity"] / np.median(data["complexity"])
    exog = np.column_stack(
        [(data["dataset"] == "A"), (data["dataset"] == "B"), np.log(data["params_b"]), ct]
    ).astype(float)
    ref = sm.Logit(data["correct"].to_numpy(float), exog).fit(disp=0, tol=1e-12, maxiter=100)
    assert fit.c_median == pytest.approx(np.median(data["complexity"]))
    np.testing.assert_allclose(fit.theta, ref.params, atol=1e-5)
    assert fit.loglik == pytest.approx(ref.llf, abs=1e-7)
    np.testing.assert_allclose(
        fit.predict(data["dataset"], data["params_b"], data["complexity"]),
        ref.predict(exog),
        atol=1e-6,
    )


def test_weights_equal_duplicated_rows():
    """A session drawn twice by the bootstrap must count exactly like its rows copied."""
    data = two_datasets("nested", TRUTH["nested"], [1.0, 4.0, 16.0], sessions=8, instances=5, seed=2)
    weights = (data["session"].str.endswith(("1", "4")).to_numpy() + 1).astype(float)
    weights[data["session"].str.endswith("7").to_numpy()] = 0.0
    copied = data.loc[data.index.repeat(weights.astype(int))]
    start = fit_model(data, "additive", QUICK).theta
    weighted = Problem(data).fit(
        "additive", FitOptions(global_search=False), row_weights=weights, start=start
    )
    plain = Problem(copied).fit("additive", FitOptions(global_search=False), start=start)
    np.testing.assert_allclose(weighted.theta, plain.theta, atol=1e-6)
    assert weighted.c_median == plain.c_median
    assert weighted.loglik == pytest.approx(plain.loglik, abs=1e-8)


def test_predict_unknown_dataset_and_too_few_sizes():
    data = two_datasets("additive", TRUTH["additive"], [1.0, 4.0], sessions=3, instances=4, seed=3)
    fit = fit_model(data, "additive", QUICK)
    with pytest.raises(ValueError, match="no intercept for dataset"):
        fit.predict("C", 2.0, 5.0)
    one_size = data[data["params_b"] == 1.0]
    with pytest.raises(FitError, match="fewer than two judge sizes"):
        fit_model(one_size, "additive", QUICK)
    zero = data.assign(complexity=0.0)
    with pytest.raises(FitError, match="median complexity"):
        fit_model(zero, "additive", QUICK)
    with pytest.raises(ValueError, match="unknown scaling model"):
        fit_model(data, "quadratic", QUICK)
    with pytest.raises(FitError, match="empty"):
        fit_model(pd.DataFrame(columns=data.columns), "additive", QUICK)
