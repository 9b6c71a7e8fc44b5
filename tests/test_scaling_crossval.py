"""Session-grouped cross-validation, the one-SE rule and leave-one-scale-out."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.scaling_data import two_datasets
from workbench.scaling import FitOptions, crossval

QUICK = FitOptions(maxiter=60)
NESTED = {"gamma_A": -0.5, "gamma_B": 0.3, "eta": 0.6, "beta": 2.5, "rho": 0.4, "alpha": 0.8}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    frame = two_datasets("nested", NESTED, [0.5, 2.0, 8.0, 32.0],
                         sessions=12, instances=5, session_sd=0.4, seed=4)
    # Session ids repeat across datasets on purpose: "s1" of A is not "s1" of B.
    frame["session"] = frame["session"].str.split("-").str[-1]
    # Uneven session sizes, as in real data.
    return frame[~((frame["session"] == "s003") & frame["instance"].str.endswith(("i3", "i4")))]


@pytest.mark.parametrize("seed", [0, 1, 2027])
def test_folds_never_split_a_session_and_keep_every_dataset(data, seed):
    folds = crossval.session_folds(data, k=5, seed=seed)
    assert set(folds) == set(range(5))
    per_session = pd.Series(folds).groupby([data["dataset"].values, data["session"].values])
    assert (per_session.nunique() == 1).all()  # no session in two folds
    for fold in range(5):
        train = data[folds != fold]
        assert set(train["dataset"]) == {"A", "B"}
    # Balanced by rows: no fold more than one session's rows away from the mean.
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 20


def test_folds_reject_too_few_sessions(data):
    single = data[(data["dataset"] == "A") | (data["session"] == "s000")]
    with pytest.raises(ValueError, match="dataset 'B' has a single session"):
        crossval.session_folds(single, k=5)
    with pytest.raises(ValueError, match="needs at least 50 sessions"):
        crossval.session_folds(data, k=50)


def test_clustered_se_hand_value():
    # values 1,3 in cluster a and 5 in cluster b; mean 3.
    # cluster sums of deviations: (1-3)+(3-3) = -2, (5-3) = 2; G=2
    # SE = sqrt(2/1 * (4 + 4)) / 3 = 4/3
    mean, se = crossval.clustered_mean_se(np.array([1.0, 3.0, 5.0]), np.array(["a", "a", "b"]))
    assert mean == 3.0 and se == pytest.approx(4 / 3)
    assert math.isnan(crossval.clustered_mean_se(np.array([1.0, 2.0]), np.array(["a", "a"]))[1])


def _cv(loss: float, se: float, name: str) -> crossval.CrossValidation:
    return crossval.CrossValidation(name, loss, se, [], np.array([]))


def test_one_se_rule_picks_simplest_within_one_se_of_best():
    cv = {
        "additive": _cv(0.620, 0.01, "additive"),
        "nested": _cv(0.612, 0.01, "nested"),
        "full": _cv(0.600, 0.015, "full"),
    }
    # best 0.600 + SE 0.015 = 0.615: nested (0.612) qualifies, additive (0.620) does not.
    assert crossval.one_se_select(cv) == "nested"
    cv["additive"] = _cv(0.615, 0.01, "additive")  # exactly on the threshold counts
    assert crossval.one_se_select(cv) == "additive"
    cv = {"additive": _cv(0.70, 0.01, "additive"), "full": _cv(0.60, 0.01, "full")}
    assert crossval.one_se_select(cv) == "full"


def test_cross_validate_scores_out_of_fold(data):
    cv = crossval.cross_validate(data, ["additive", "nested"], k=5, options=QUICK, seed=3)
    for result in cv.values():
        assert result.oof_prob.shape == (len(data),)
        assert np.all((result.oof_prob > 0) & (result.oof_prob < 1))
        assert len(result.fold_logloss) == 5
        assert 0.3 < result.cv_logloss < 0.75 and 0 < result.cv_se < 0.1
    # Out-of-fold, not in-sample: the in-sample log loss of the same model is lower.
    from workbench.scaling import fit_model

    fit = fit_model(data, "nested", QUICK)
    in_sample = -fit.loglik / len(data)
    assert cv["nested"].cv_logloss > in_sample


def test_calibration_error_hand_value():
    # bin [0.1,0.2): p=0.1,0.1 observed 0,1 -> |0.5-0.1| weight 2; bin [0.9,1]: p=0.9 y=1 -> 0.1
    ece = crossval.calibration_error(np.array([0.1, 0.1, 0.9]), np.array([0, 1, 1]))
    assert ece == pytest.approx((2 * 0.4 + 0.1) / 3)


def test_leave_one_scale_out(data):
    records = crossval.leave_one_scale_out(data, ["additive"], options=QUICK)
    assert [r["params_b"] for r in records] == [0.5, 2.0, 8.0, 32.0]
    for r in records:
        held = data[data["params_b"] == r["params_b"]]
        assert r["n"] == len(held)
        assert r["observed"] == pytest.approx(held["correct"].mean())
        assert r["calibration_gap"] == pytest.approx(r["mean_predicted"] - r["observed"])
        assert 0 <= r["accuracy"] <= 1 and r["log_loss"] > 0
    assert crossval.leave_one_scale_out(data[data["params_b"] < 8], ["additive"], options=QUICK) == []
