"""A scaling fit that knows when it cannot tell: complexity that hardly varies, a coefficient
on its search bound, and gains against a judge size nobody ran."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.cli import main
from workbench.scaling import AnalysisOptions, FitOptions, GainGrid, ScalingFit, analyse_scaling
from workbench.scaling.identify import (
    bounds_note,
    complexity_not_identifiable,
    complexity_spreads,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "scaling"
TWO_SIZES = FIX / "two_sizes" / "outcomes.csv"
QUICK = FitOptions(maxiter=40, popsize=8)


def test_the_real_two_size_fit_says_complexity_is_not_identifiable(capsys):
    assert main(["scaling", "fit", str(TWO_SIZES), "--bootstrap", "0", "--no-loso"]) == 0
    out = capsys.readouterr().out
    assert "complexity is not identifiable here" in out
    # C 1.1127–1.1138 on the 27 CompliBench airline SKILLs: (1.1138 - 1.1127) / 1.113 ≈ 0.10 %
    assert "C 1.1127–1.1138, relative spread 0.10 %" in out
    assert "size-only model, logit P = gamma_d + a ln N" in out
    assert "Reported: size (complexity not identifiable; see the note)" in out
    assert "b " not in out.split("Parameters of size")[1]  # no complexity coefficient shown


def test_the_size_only_report_and_its_gain_against_a_size_that_was_run():
    outcomes = pd.read_csv(TWO_SIZES)
    report = analyse_scaling(outcomes, AnalysisOptions(bootstrap=0, loso=False, fit=QUICK))
    assert report.fallback and report.selected == "size" and set(report.fits) == {"size"}
    fit = report.fits["size"]
    assert fit.at_bounds == [] and fit.params["a"] > 0
    assert report.grid.reference == 0.5  # the smallest judge run, not the first paper's 2B
    gains = report.gains()
    small, large = gains["params_b"].tolist()
    assert (small, large) == (0.5, 1.5)
    assert gains["gain_q10"].tolist()[0] == pytest.approx(0.0)
    # P(1.5B) - P(0.5B) from the size-only fit: the observed accuracies 0.609 and 0.499
    assert gains["gain_q10"].tolist()[1] == pytest.approx(0.609 - 0.499, abs=0.01)
    # Asked for a 2B reference that was not run: the smallest run size, and a note saying so.
    asked = analyse_scaling(outcomes, AnalysisOptions(bootstrap=0, loso=False, fit=QUICK,
                                                      reference_b=2.0))
    assert asked.grid.reference == 0.5
    assert any("no judge of 2B was run" in n for n in asked.notes)
    with pytest.raises(ValueError, match="no judge of 2B was run"):
        GainGrid.from_outcomes(outcomes, 2.0)


def test_the_command_refuses_a_reference_size_that_was_not_run(capsys):
    assert main(["scaling", "fit", str(TWO_SIZES), "--reference", "2", "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert "no judge of 2B was run" in err and "0.5, 1.5" in err


def test_complexity_that_varies_is_identifiable():
    # The simulated demo outcomes span C 2–32 and 2–50: far above the 1 % tolerance.
    outcomes = pd.read_csv(FIX / "outcomes.csv")
    assert complexity_not_identifiable(outcomes) is None
    assert min(s.relative for s in complexity_spreads(outcomes)) > 1
    # the same rows with C squeezed to within 0.5 % of its median are not
    squeezed = outcomes.assign(complexity=1.0 + 0.005 * outcomes["complexity"] / 50)
    assert "not identifiable" in complexity_not_identifiable(squeezed)


def test_a_coefficient_on_its_bound_is_named_with_the_bound():
    fit = ScalingFit("additive", ["d"], np.array([-9.72, 0.4, 10.0]), 1.113, -212.5, 312.0,
                     at_bounds=["b"])
    note = bounds_note(fit, "size")
    assert "b = +10 (bounds [-10, 10]) ended on the search bound" in note
    assert "Reported: the size-only model" in note
    fit.at_bounds = []
    assert bounds_note(fit, "size") is None
