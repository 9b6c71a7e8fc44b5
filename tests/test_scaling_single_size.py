"""One judge size: the analysis compares the size-free intercept/complexity families instead of
refusing, and everything that needs two sizes says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.cli import main
from workbench.scaling import (
    AnalysisOptions,
    FitError,
    FitOptions,
    SelectionError,
    analyse_scaling,
    fit_model,
    select_distillation,
)
from workbench.scaling.simulate import simulate_outcomes, true_probability

FAST = FitOptions(maxiter=60)


def _one_judge(b: float, seed: int = 3):
    # 60 sessions x 8 instances of one 1.5B judge; b is the complexity slope on the logit.
    return simulate_outcomes(
        "complexity",
        {"gamma_airlines": 1.5, "b": b},
        datasets=["airlines"],
        sizes=[1.5],
        sessions_per_dataset=60,
        instances_per_session=8,
        seed=seed,
    )


def test_scaling_families_still_refuse_one_size():
    with pytest.raises(FitError, match="fewer than two judge sizes"):
        fit_model(_one_judge(-1.0), "additive", FAST)


def test_complexity_fit_recovers_the_slope():
    data = _one_judge(-1.0)
    fit = fit_model(data, "complexity", FAST)
    assert set(fit.params) == {"gamma_airlines", "b"}
    c = np.array([3.0, 10.0, 25.0])
    truth = true_probability(
        "complexity", {"gamma_airlines": 1.5, "b": -1.0}, ["airlines"], "airlines", 1.5, c
    )
    # the fit scales C by the sample median, the truth by 10: compare probabilities, not b
    assert np.max(np.abs(fit.predict("airlines", 1.5, c) - truth)) < 0.06


def test_single_size_analysis_selects_complexity_when_it_matters():
    report = analyse_scaling(_one_judge(-1.0), AnalysisOptions(bootstrap=60, fit=FAST))
    assert report.single_size and report.notes
    assert set(report.fits) == {"intercept", "complexity"}
    assert report.selected == "complexity"
    assert report.loso == []
    lo, hi = report.bootstrap["complexity"].intervals["b"]
    assert hi < 0  # the interval excludes "no complexity effect"
    effect = report.to_json()["models"]["complexity"]["derived"]["complexity_effect_airlines_1.5B"]
    assert effect < -0.1
    gains = report.gains("complexity")
    assert gains["gain_q90"].isna().all()  # no second size: no gains to report


def test_single_size_analysis_keeps_the_intercept_without_an_effect():
    report = analyse_scaling(_one_judge(0.0, seed=5), AnalysisOptions(bootstrap=0, fit=FAST))
    assert report.selected == "intercept"


def test_distillation_refuses_a_size_free_model():
    data = _one_judge(-1.0)
    fit = fit_model(data, "complexity", FAST)
    with pytest.raises(SelectionError, match="no judge-size term"):
        select_distillation(data, fit, 9.0, 1.5, 10)


def test_cli_fit_and_select_on_one_size(tmp_path, capsys):
    path = tmp_path / "one.csv"
    _one_judge(-1.0).to_csv(path, index=False)
    assert main(["scaling", "fit", str(path), "--json", "--bootstrap", "5", "--maxiter", "40"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"] in {"intercept", "complexity"} and out["judge_sizes"] == [1.5]
    assert "one judge size" in out["notes"][0]
    assert main(["scaling", "fit", str(path), "--bootstrap", "0", "--maxiter", "30"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("note: The outcomes hold one judge size") and "Leave-one-scale-out" not in text
    args = ["scaling", "select", str(path), "--teacher", "9", "--student", "1.5", "--n", "5"]
    assert main(args + ["--out", str(tmp_path / "sets")]) == 2
    assert "one judge size (1.5B)" in capsys.readouterr().err


def test_intercept_model_reports_no_complexity_effect():
    report = analyse_scaling(_one_judge(-1.0), AnalysisOptions(bootstrap=5, fit=FAST))
    quantities = set(report.intervals_table("intercept")["quantity"])
    assert "p_airlines_1.5B_q10" in quantities
    assert not any(q.startswith("complexity_effect") for q in quantities)
    assert "complexity_effect_airlines_1.5B" in set(report.intervals_table("complexity")["quantity"])
