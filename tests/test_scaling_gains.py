"""Gains G_b(C, d) = P_b - P_ref and Delta G between the 90th and 10th complexity percentile."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.scaling import (
    GainGrid,
    ScalingFit,
    complexity_quantiles,
    derived_quantities,
    gain,
    gain_table,
)


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _full_fit() -> ScalingFit:
    # gamma=0, eta=0, beta=1, rho=1, alpha=1, lambda=ln 2, median C = 10:
    # logit P = (1 - exp(-N)) * 2**(-C/10)
    theta = np.array([0.0, 0.0, 1.0, 1.0, 1.0, math.log(2)])
    return ScalingFit("full", ["A"], theta, c_median=10.0, loglik=0.0, n_obs=1.0)


def test_gain_hand_values():
    fit = _full_fit()
    # C = 0: logit = 1 - e^-N; C = 10: halved.
    expected = _expit(1 - math.exp(-8)) - _expit(1 - math.exp(-2))
    assert gain(fit, "A", 8.0, 0.0, reference=2.0) == pytest.approx(expected)
    expected_hi = _expit((1 - math.exp(-8)) / 2) - _expit((1 - math.exp(-2)) / 2)
    assert gain(fit, "A", 8.0, 10.0, reference=2.0) == pytest.approx(expected_hi)
    assert gain(fit, "A", 2.0, 5.0, reference=2.0) == 0.0


def test_gain_table_and_derived_names():
    fit = _full_fit()
    grid = GainGrid(sizes=(2.0, 8.0), reference=2.0, complexity={"A": (0.0, 10.0)})
    table = gain_table(fit, grid)
    row = table[table["params_b"] == 8.0].iloc[0]
    assert row["delta_gain"] == pytest.approx(row["gain_q90"] - row["gain_q10"])
    assert row["gain_q10"] == pytest.approx(gain(fit, "A", 8.0, 0.0))
    derived = derived_quantities(fit, grid)
    assert set(derived) == {
        "p_A_2B_q10",
        "p_A_2B_q90",
        "p_A_8B_q10",
        "p_A_8B_q90",
        "complexity_effect_A_2B",
        "complexity_effect_A_8B",
        "gain_A_8B_q10",
        "gain_A_8B_q90",
        "delta_gain_A_8B",
    }
    # damping halves the scale benefit on complex cases, so the gain shrinks: Delta G < 0
    assert derived["delta_gain_A_8B"] < 0
    assert derived["complexity_effect_A_8B"] == pytest.approx(row["p_q90"] - row["p_q10"])
    assert derived["complexity_effect_A_8B"] < 0  # eta > 0: complex cases are judged worse
    other_reference = derived_quantities(fit, GainGrid((2.0, 8.0), 8.0, {"A": (0.0, 10.0)}))
    assert "gain_A_2B_q10" in other_reference and "gain_A_8B_q10" not in other_reference


def test_complexity_quantiles_count_each_instance_once():
    # instance x (C=100) was judged by three judges, y and z (C=0, 1) by one each;
    # per instance the values are 0, 1, 100 -> median 1, not 100.
    rows = pd.DataFrame(
        {
            "instance": ["x", "x", "x", "y", "z"],
            "dataset": ["A"] * 5,
            "complexity": [100.0, 100.0, 100.0, 0.0, 1.0],
            "params_b": [1.0, 2.0, 4.0, 1.0, 1.0],
        }
    )
    assert complexity_quantiles(rows, (0.5,)) == {"A": (1.0,)}
    with pytest.raises(ValueError, match="reference judge size must be > 0"):
        GainGrid.from_outcomes(rows, reference=0)
