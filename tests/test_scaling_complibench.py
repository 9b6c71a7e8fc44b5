"""The real outcomes: the embedded 1.5B judge on a CompliBench airlines sample
(``fixtures/scaling/complibench_airlines``). They must agree with the verdicts they were
scored from, and the analysis must run on them as a user would run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scaling_fixtures import assert_scored_from, verdict_rows
from workbench.scaling import AnalysisOptions, FitOptions, analyse_scaling, load_outcomes, session_folds

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "scaling" / "complibench_airlines"


@pytest.fixture(scope="module")
def outcomes():
    return load_outcomes(HERE / "outcomes.csv")


@pytest.fixture(scope="module")
def verdicts():
    return {row["instance"]: row for row in verdict_rows(HERE)}


def test_outcomes_are_the_verdicts_scored_against_gold(outcomes, verdicts):
    assert set(outcomes["instance"]) == set(verdicts)
    assert outcomes["params_b"].unique().tolist() == [1.5]
    assert outcomes["session"].nunique() == 82  # every conversation of the corpus
    assert_scored_from(outcomes, lambda row: verdicts[row.instance])


def test_every_session_stays_in_one_fold(outcomes):
    folds = session_folds(outcomes, 5, 2027)
    assert (outcomes.assign(fold=folds).groupby("session")["fold"].nunique() == 1).all()


def test_analysis_reproduces_the_stored_fit(outcomes):
    stored = json.loads((HERE / "fit.json").read_text(encoding="utf-8"))
    report = analyse_scaling(outcomes, AnalysisOptions(bootstrap=50, fit=FitOptions()))
    assert report.single_size and set(report.fits) == {"intercept", "complexity"}
    assert report.selected == stored["selected"]
    for name, fit in report.fits.items():
        for param, value in fit.params.items():
            assert value == pytest.approx(stored["models"][name]["params"][param], abs=1e-3)
        assert report.cv[name].cv_logloss == pytest.approx(stored["models"][name]["cv_logloss"], abs=1e-6)
