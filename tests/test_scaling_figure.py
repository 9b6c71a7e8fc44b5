"""The plotly scaling figure: fitted lines at the 10th/90th complexity percentile, observed
binned rates with Wilson intervals, and escaped user text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.scaling_data import two_datasets
from workbench.scaling import (
    FitOptions,
    complexity_bins,
    complexity_figure,
    fit_model,
    observed_bins,
    scaling_figure,
    wilson_interval,
)

ADDITIVE = {"gamma_<b>x</b>": -0.3, "gamma_B": 0.4, "a": 0.5, "b": -0.8}


def test_wilson_interval_hand_value():
    # k=5, n=10, z=1.96: centre 0.5, half = 1.96*sqrt(0.025 + 0.0096)/1.3842 = 0.2634...
    lo, hi = wilson_interval(np.array([5]), np.array([10]))
    z = 1.96
    half = z * math.sqrt(0.25 / 10 + z**2 / 400) / (1 + z**2 / 10)
    assert lo[0] == pytest.approx(0.5 - half) and hi[0] == pytest.approx(0.5 + half)


def test_figure_panels_lines_and_escaping():
    data = two_datasets("additive", ADDITIVE, [1.0, 4.0, 16.0],
                        sessions=6, instances=10, seed=1, datasets=("<b>x</b>", "B"))
    fit = fit_model(data, "additive", FitOptions(maxiter=40))
    fig = scaling_figure(data, fit)
    titles = [a.text for a in fig.layout.annotations]
    assert "&lt;b&gt;x&lt;/b&gt;" in titles and "<b>x</b>" not in titles
    lines = [t for t in fig.data if t.mode == "lines"]
    markers = [t for t in fig.data if t.mode == "markers"]
    assert len(lines) == 4 and len(markers) == 4  # 2 datasets x (low, high)
    # the low-complexity line of dataset B is the fit at B's 10th complexity percentile
    b_instances = data[data["dataset"] == "B"].drop_duplicates("instance")
    c10 = np.quantile(b_instances["complexity"], 0.1)
    low_b = lines[2]
    np.testing.assert_allclose(low_b.y, fit.predict("B", np.asarray(low_b.x), c10))
    assert fig.layout.xaxis.type == "log"
    bins = observed_bins(data, "B")
    assert set(bins["bin"]) == {"low", "high"} and set(bins["params_b"]) == {1.0, 4.0, 16.0}
    low = bins[bins["bin"] == "low"]
    assert (low["rate"] >= low["ci_low"]).all() and (low["rate"] <= low["ci_high"]).all()


def test_complexity_figure_one_line_per_size_and_equal_count_bins():
    data = two_datasets("additive", ADDITIVE, [1.0, 4.0],
                        sessions=6, instances=10, seed=2, datasets=("<b>x</b>", "B"))
    fit = fit_model(data, "additive", FitOptions(maxiter=40))
    fig = complexity_figure(data, fit)
    assert "&lt;b&gt;x&lt;/b&gt;" in [a.text for a in fig.layout.annotations]
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 4  # 2 datasets x 2 sizes
    # B's 4B line is the fit along C at size 4
    np.testing.assert_allclose(lines[3].y, fit.predict("B", 4.0, np.asarray(lines[3].x)))
    bins = complexity_bins(data, "B", bins=5)
    one_size = bins[bins["params_b"] == 1.0]
    assert one_size["n"].sum() == 60  # every row of B at 1B lands in exactly one bin
    assert one_size["c_mid"].is_monotonic_increasing
    assert (one_size["rate"] >= one_size["ci_low"]).all() and (one_size["rate"] <= one_size["ci_high"]).all()
