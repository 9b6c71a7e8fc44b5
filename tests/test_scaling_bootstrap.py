"""The session-clustered bootstrap resamples whole sessions, within each dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.scaling_data import two_datasets
from workbench.scaling import (
    FitOptions,
    GainGrid,
    bootstrap_intervals,
    derived_quantities,
    fit_model,
    percentile_intervals,
    session_bootstrap_weights,
)

QUICK = FitOptions(maxiter=60)
ADDITIVE = {"gamma_A": -0.3, "gamma_B": 0.4, "a": 0.5, "b": -0.8}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    frame = two_datasets("additive", ADDITIVE, [1.0, 2.0, 8.0],
                         sessions=10, instances=4, session_sd=0.5, seed=9)
    return frame[frame["dataset"].eq("A") | ~frame["session"].str.endswith("9")]  # B has 9


def test_weights_are_whole_sessions_drawn_within_datasets(data):
    sessions_per_dataset = data.groupby("dataset")["session"].nunique().to_dict()
    draws = list(session_bootstrap_weights(data, 50, seed=1))
    assert len(draws) == 50
    saw_zero = saw_repeat = False
    for weights in draws:
        assert weights.shape == (len(data),)
        assert np.all(weights == np.round(weights)) and weights.min() >= 0
        frame = data.assign(w=weights)
        per_session = frame.groupby(["dataset", "session"])["w"]
        assert (per_session.nunique() == 1).all()  # every row of a session shares its count
        counts = per_session.first()
        # each dataset draws as many sessions as it has: 10 for A, 9 for B
        assert counts.groupby(level=0).sum().to_dict() == sessions_per_dataset
        saw_zero |= bool((counts == 0).any())
        saw_repeat |= bool((counts >= 2).any())
    assert saw_zero and saw_repeat  # with replacement: some left out, some drawn twice


def test_weights_reproducible_by_seed(data):
    a = np.array(list(session_bootstrap_weights(data, 5, seed=2027)))
    b = np.array(list(session_bootstrap_weights(data, 5, seed=2027)))
    c = np.array(list(session_bootstrap_weights(data, 5, seed=2028)))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_percentile_intervals_hand_values():
    # 1..101 (linear interpolation): 2.5th pct at position 2.5 -> 3.5, 97.5th -> 98.5
    draws = np.arange(1.0, 102.0)[:, None]
    assert percentile_intervals(draws, ["x"], 0.95)["x"] == pytest.approx((3.5, 98.5))
    assert percentile_intervals(np.empty((0, 1)), ["x"], 0.95) == {}


def test_bootstrap_intervals_cover_estimates_and_are_paired(data):
    fits = {m: fit_model(data, m, QUICK) for m in ("additive", "nested")}
    grid = GainGrid.from_outcomes(data, reference=2.0)
    result = bootstrap_intervals(
        data,
        fits,
        lambda f: derived_quantities(f, grid),
        n_replicates=40,
        seed=2027,
        options=QUICK,
    )
    add = result["additive"]
    assert add.draws.shape == (40, len(add.names)) and add.failed == 0
    assert add.names[:4] == ["gamma_A", "gamma_B", "a", "b"]
    assert "delta_gain_A_8B" in add.intervals and "gain_B_1B_q90" in add.intervals
    assert "gain_A_2B_q10" not in add.intervals  # the reference size has no gain
    estimates = fits["additive"].params | derived_quantities(fits["additive"], grid)
    for name, (lo, hi) in add.intervals.items():
        assert lo <= hi
        assert lo - 1e-9 <= estimates[name] <= hi + 1e-9, name
    again = bootstrap_intervals(data, fits, n_replicates=40, seed=2027, options=QUICK)
    np.testing.assert_allclose(again["additive"].draws, add.draws[:, :4])


def test_full_refit_fits_each_replicate_from_scratch_local_starts_at_the_estimate(data):
    from workbench.scaling import Problem

    fit = fit_model(data, "additive", QUICK)
    weights = next(iter(session_bootstrap_weights(data, 1, seed=5)))
    problem = Problem(data, ["A", "B"])
    scratch = problem.fit("additive", QUICK, row_weights=weights)  # global search + polish
    full = bootstrap_intervals(data, {"additive": fit}, n_replicates=1, seed=5, options=QUICK,
                               refit="full")["additive"]
    np.testing.assert_allclose(full.draws[0], scratch.theta)
    local_options = FitOptions(maxiter=QUICK.maxiter, global_search=False)
    anchored = problem.fit("additive", local_options, row_weights=weights, start=fit.theta)
    local = bootstrap_intervals(data, {"additive": fit}, n_replicates=1, seed=5, options=QUICK,
                                refit="local")["additive"]
    np.testing.assert_allclose(local.draws[0], anchored.theta)
    with pytest.raises(ValueError, match="unknown bootstrap refit mode 'fast'.*full, local"):
        bootstrap_intervals(data, {"additive": fit}, n_replicates=1, refit="fast")
