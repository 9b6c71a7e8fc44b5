"""Calibration, thresholds and selective review on hand-computed data."""

from __future__ import annotations

import math
import random

import pytest

from workbench.decision import (
    DecisionSetting,
    Scored,
    accuracy_at_coverage,
    auroc,
    best_threshold,
    decide,
    fit_monotone,
    fit_verbal_setting,
    grouped_splits,
    out_of_fold,
    reliability,
    risk_coverage,
    threshold_curve,
)
from workbench.decision.scorers import logit

# p and the truth; each case its own conversation unless a test says otherwise.
DATA = [(0.9, True), (0.8, True), (0.7, False), (0.6, True), (0.4, False), (0.3, True),
        (0.2, False), (0.1, False)]


def scored(data=DATA, groups=None):
    return [Scored(p, t, groups[i] if groups else f"g{i}", f"c{i}") for i, (p, t) in enumerate(data)]


def fit_platt(cases):
    """The verbal probability's calibration: the one monotone fit on its log-odds."""
    return fit_monotone([logit(s.probability) for s in cases], [s.violation for s in cases])


def probs(cases):
    return [s.probability for s in cases], [s.violation for s in cases]


def test_auroc_is_the_share_of_violation_compliant_pairs_ordered_right():
    # Violations {.9, .8, .6, .3} against compliant {.7, .4, .2, .1}: .9 and .8 beat all 4,
    # .6 beats 3, .3 beats 2: 13 of 16 pairs.
    assert auroc(*probs(scored())) == pytest.approx(13 / 16)
    assert math.isnan(auroc(*probs(scored([(0.3, True), (0.9, True)]))))


def test_the_threshold_maximises_violation_f1():
    # Deciding p >= t: t = .25 catches all 4 violations with 2 false alarms: F1 = 8/10 = 0.8;
    # t = .5 gives TP 3, FP 1, FN 1: 0.75; t = .75 gives 2 of 4: 4/6 = 0.667.
    assert best_threshold(*probs(scored())) == pytest.approx(0.25)
    curve = {round(r["threshold"], 3): r for r in threshold_curve(*probs(scored()))}
    assert curve[0.25]["f1"] == pytest.approx(0.8) and curve[0.5]["f1"] == pytest.approx(0.75)
    assert curve[0.75]["precision"] == 1.0 and curve[0.75]["recall"] == 0.5


def test_a_cases_calibration_is_never_fitted_with_its_own_conversation():
    data = DATA + [(0.85, True), (0.35, False), (0.65, True), (0.15, False), (0.55, False),
                   (0.75, True)]
    cases = scored(data)
    p, truth = probs(cases)
    oof = out_of_fold([logit(x) for x in p], truth, [c.group for c in cases], 0.5,
                      folds=len(cases))  # one conversation per fold
    for i in range(len(cases)):
        others = [c for j, c in enumerate(cases) if j != i]
        assert oof.q[i] == pytest.approx(fit_platt(others)(logit(p[i])))
    # Two cases of one conversation always land in the same fold (the one splitter).
    groups = list("aabbccddeeffgg")
    for train, test in grouped_splits(groups, 4):
        assert not {groups[i] for i in train} & {groups[i] for i in test}


def test_reliability_bins_hold_mean_probability_and_violation_rate():
    rows = reliability([0.05, 0.15, 0.12, 0.95, 1.0], [False, True, False, True, True], bins=10)
    assert [(r["bin_low"], r["cases"]) for r in rows] == [(0.0, 1), (0.1, 2), (0.9, 2)]
    assert rows[1]["mean_probability"] == pytest.approx(0.135) and rows[1]["violation_rate"] == 0.5


def test_risk_coverage_orders_by_confidence_and_keeps_ties_together():
    conf = [0.99, 0.9, 0.9, 0.6, 0.55]
    right = [True, True, False, True, False]
    rows = risk_coverage(conf, right)
    assert [(r["cases"], round(r["accuracy"], 3)) for r in rows] == [
        (1, 1.0), (3, 0.667), (4, 0.75), (5, 0.6)]
    # The 2 most confident: .99 (right) and one of the two .9 (one right, one wrong): the tie
    # is filled at its mean accuracy, whichever .9 comes first.
    assert accuracy_at_coverage(conf, right, 0.4) == 0.75
    assert accuracy_at_coverage([0.99, 0.9, 0.9], [True, False, True], 0.67) == 0.75
    assert accuracy_at_coverage(conf, right, 0.2) == 1.0


def test_accuracy_of_the_confident_half_does_not_depend_on_the_order_of_tied_cases():
    """A judge that gives every case the same confidence has no confident half: the figure
    is its overall accuracy (it was that of whichever cases came first, so a resampled run
    could report a point outside its own bootstrap interval)."""
    right = [True, False, False, False, True, False, False, False]
    for order in (right, sorted(right), sorted(right, reverse=True)):
        assert accuracy_at_coverage([0.7] * 8, order, 0.5) == pytest.approx(0.25)


def test_platt_scaling_recovers_a_calibrated_judge_and_refuses_too_few_cases():
    rng = random.Random(3)
    data = []
    for i in range(3000):
        p = rng.uniform(0.02, 0.98)
        data.append(Scored(p, rng.random() < p, f"g{i}"))
    platt = fit_platt(data)
    assert platt is not None and platt.a == pytest.approx(1.0, abs=0.15) and abs(platt.b) < 0.15
    # Overconfident probabilities (p = sigmoid(3 * true log-odds)) are pulled back: a ~ 1/3.
    def sharpen(p: float) -> float:
        return 1 / (1 + math.exp(-3 * math.log(p / (1 - p))))

    over = [Scored(sharpen(s.probability), s.violation, s.group) for s in data]
    assert fit_platt(over).a == pytest.approx(1 / 3, abs=0.06)
    assert fit_platt(scored()) is None  # 4 violations: below 5 per answer


def test_a_setting_is_fitted_on_all_cases_and_reports_out_of_fold_figures():
    rng = random.Random(7)
    cases = []
    for i in range(120):
        truth = i % 2 == 0
        p = min(0.99, max(0.01, rng.gauss(0.65 if truth else 0.35, 0.15)))
        cases.append(Scored(p, truth, f"conv{i // 3}", f"c{i}"))
    setting = fit_verbal_setting(cases, folds=5, bare=[s.probability > 0.5 for s in cases],
                                 judge_mode="whole")
    cv = setting.cross_validated
    assert cv["folds"] == 5 and cv["grouped_by"] == "conversation"
    assert 0.8 < cv["auroc"] <= 1.0 and 0.5 < cv["f1"] <= 1.0
    assert setting.fitted_on["cases"] == 120 and setting.fitted_on["groups"] == 40
    assert setting.fitted_on["judge_mode"] == "whole"
    # Equal costs: a violation from a calibrated 0.5 (not the best-F1 threshold, which is
    # reported beside it for comparison).
    assert setting.threshold == 0.5
    assert cv["best_f1_threshold"] == best_threshold(*probs(cases))
    back = DecisionSetting.from_dict(setting.to_dict())
    assert back == setting
    # Confidence is the calibrated probability that the decision is right.
    high, low = decide(back, probability=0.9), decide(back, probability=0.01)
    assert high.violation and high.confidence == pytest.approx(high.probability)
    assert not low.violation and low.confidence > 0.5


@pytest.mark.parametrize("bad", [{}, {"threshold": 1.5}, {"threshold": True},
                                 {"threshold": 0.4, "calibration": {"a": 1}}])
def test_a_damaged_setting_is_refused(bad):
    with pytest.raises(ValueError):
        DecisionSetting.from_dict(bad)
