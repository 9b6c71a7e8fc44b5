"""The decision's one home: scorers on hand-computed data, monotone calibration, the
error-rate guarantee, the one decision rule (and that it is written nowhere else), and the
features folder."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from workbench.decision import (
    DecisionSetting,
    Monotone,
    Outcome,
    ScoreSource,
    binom_pvalue,
    choose_level,
    cost_threshold,
    decide,
    fit_monotone,
    realised,
    upper_bound,
)
from workbench.decision import features as ff
from workbench.decision.learn import Labelled, auroc, choose, grouped_splits, nested_scores
from workbench.decision.scorers import (
    fit_probe,
    fit_whitening,
    scorer_from_dict,
)

ROOT = Path(__file__).resolve().parent.parent


def test_whitening_is_the_mahalanobis_norm_on_hand_computed_data():
    # Compliant cases on a 2-D plane: x-spread 2, y-spread 1 (variance 4/3 and 1/3 with n-1).
    ok = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    w = fit_whitening(ok, np.zeros(4, bool), layer=3, components=2)
    w.inv_var = 1.0 / np.array([8 / 3, 2 / 3])  # undo the shrinkage for the hand figure
    assert np.allclose(w.mean, 0.0)
    # Along x one unit is sqrt(3/8) whitened units, along y sqrt(3/2): y is the rarer direction.
    assert w.score(np.array([[1.0, 0.0]]))[0] == pytest.approx(math.sqrt(3 / 8))
    assert w.score(np.array([[0.0, 1.0]]))[0] == pytest.approx(math.sqrt(3 / 2))
    back = scorer_from_dict(w.to_dict())
    assert np.allclose(back.score(np.array([[0.3, -0.7]])), w.score(np.array([[0.3, -0.7]])))


def test_whitening_fits_on_compliant_cases_only():
    rng = np.random.default_rng(0)
    ok = rng.normal(0, 1, (30, 5))
    bad = rng.normal(0, 1, (30, 5)) + np.array([0, 0, 0, 0, 6.0])
    x = np.vstack([ok, bad])
    y = np.array([False] * 30 + [True] * 30)
    w = fit_whitening(x, y, layer=1)
    assert np.allclose(w.mean, ok.mean(axis=0))
    assert auroc(w.score(x), y) > 0.95


def test_probe_learns_a_separating_direction_and_round_trips():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (80, 6))
    y = x[:, 2] + 0.3 * rng.normal(size=80) > 0
    p = fit_probe(x, y, layer=2, c=1.0)
    assert abs(p.weights[2]) == max(abs(p.weights))
    assert auroc(p.score(x), y) > 0.95
    back = scorer_from_dict(p.to_dict())
    assert np.allclose(back.score(x[:3]), p.score(x[:3]), atol=1e-5)
    with pytest.raises(ValueError, match="unknown scorer kind"):
        scorer_from_dict({"kind": "oracle"})


def _labelled(n=60, signal=2.0, seed=0) -> Labelled:
    rng = np.random.default_rng(seed)
    y = np.array([i % 2 == 0 for i in range(n)])
    x = rng.normal(0, 1, (n, 2, 8))
    x[:, 1, 0] += signal * y  # layer 4 carries the answer, layer 2 does not
    groups = [f"conv{i // 2}" for i in range(n)]
    verbal = [0.5 + 0.1 * (rng.random() - 0.5) for _ in range(n)]
    return Labelled([f"c{i}" for i in range(n)], groups, y, verbal, x, (2, 4))


def test_the_choice_finds_the_informative_layer_and_nested_scores_stay_out_of_fold():
    data = _labelled()
    ch = choose(data, ("probe", "whitening"))
    assert ch.config.layer == 4 and ch.auroc > 0.8
    s, cfgs = nested_scores(data, kinds=("probe",))
    assert not np.isnan(s).any() and len(cfgs) == 5
    assert auroc(s, data.violation) > 0.8
    # no conversation on both sides of a split
    for tr, te in grouped_splits(data.groups, 5):
        assert not {data.groups[i] for i in tr} & {data.groups[i] for i in te}


def test_monotone_calibration_refuses_to_run_backwards():
    # Scores that rank violations *below* compliant cases: the slope stays at 0 (base rate
    # for all), it never inverts the order, and the setting says it does not rank.
    scores = [3.0, 2.5, 2.0, 1.5, 1.0, -1.0, -1.5, -2.0, -2.5, -3.0]
    truth = [False] * 5 + [True] * 5
    cal = fit_monotone(scores, truth)
    assert cal.a == 0.0 and not cal.ranks
    assert cal(3.0) == pytest.approx(cal(-3.0)) == pytest.approx(0.5, abs=0.01)
    good = fit_monotone(scores, [not t for t in truth])
    assert good.a > 0 and good.ranks and good(3.0) > good(-3.0)
    with pytest.raises(ValueError, match=">= 0"):
        Monotone(-0.3, 0.0)
    assert fit_monotone([1.0, 2.0], [True, False]) is None  # too few to fit


def test_an_old_setting_with_a_negative_slope_is_read_as_not_ranking():
    """The demo's saved Platt fit a = -0.283 showed 0.11 as 'probably compliant — 41 %' and 0.45
    as 'possible violation — 46 %': read now, the backwards calibration is dropped."""
    old = DecisionSetting.from_dict({"threshold": 0.3, "calibration": {"a": -0.283, "b": -0.5}})
    assert old.calibration is None and not old.ranks and old.auto_level is None
    a, b = decide(old, probability=0.11), decide(old, probability=0.45)
    assert a.probability < b.probability  # the order of cases is the judge's again
    # A positive one carries its raw threshold to the calibrated scale: same decisions.
    kept = DecisionSetting.from_dict({"threshold": 0.3, "calibration": {"a": 1.2, "b": 0.1}})
    for p in (0.05, 0.29, 0.31, 0.9):
        assert decide(kept, probability=p).violation == (p >= 0.3)
    with pytest.raises(ValueError):
        DecisionSetting.from_dict({"threshold": 0.3, "scale": "calibrated",
                                   "calibration": {"a": -1.0, "b": 0.0}})


def test_the_decision_and_its_words_cannot_disagree():
    """With a saved threshold of 0.7 and p = 0.6 the card said 'Violation' above 'probably
    compliant': the decision now comes from one function, and the header reads it."""
    from workbench.words import probability as decision_words

    s = DecisionSetting(0.7)
    d = decide(s, probability=0.6, verdict=True)
    assert d.outcome is Outcome.COMPLIANT and d.source is ScoreSource.VERBAL
    assert decision_words(d).startswith("probably compliant")
    # without a score, the judge's yes/no stands and says so
    bare = decide(s, verdict=True)
    assert bare.violation and bare.confidence is None and bare.source is ScoreSource.VERDICT
    assert decide(s) is None
    # an activation setting reads the activation score, not the verbal one
    act = DecisionSetting(0.5, {"a": 1.0, "b": 0.0}, scorer={"kind": "probe"})
    assert decide(act, probability=0.99, activation=-2.0).outcome is Outcome.COMPLIANT
    assert cost_threshold(miss_cost=4, false_alarm_cost=1) == pytest.approx(0.2)


def test_automatic_decisions_only_above_the_guaranteed_level_and_only_when_it_ranks():
    s = DecisionSetting(0.5, {"a": 1.0, "b": 0.0}, auto={"level": 0.9, "alpha": 0.1})
    assert decide(s, probability=0.99).automatic and not decide(s, probability=0.8).automatic
    s.ranks = False
    assert not decide(s, probability=0.99).automatic


def test_the_guarantee_holds_on_synthetic_data():
    """Learn-then-test on a calibration half, checked on 200 fresh halves: the realised error
    above the chosen level exceeds α in at most about δ of them."""
    rng = np.random.default_rng(4)
    alpha, delta, over, covered = 0.1, 0.05, 0, []

    def draw(n):
        conf = 0.5 + 0.5 * rng.beta(4.0, 1.0, n)  # a judge mostly sure of itself
        right = rng.random(n) < conf  # calibrated: P(right) = confidence
        return conf, right

    for _ in range(200):
        g = choose_level(*draw(500), alpha, delta)
        conf, right = draw(4000)
        cov, err = realised(conf, right, g.level)
        if g.level is not None:
            covered.append(cov)
            over += err > alpha
    assert over / 200 <= 0.08
    assert np.mean(covered) > 0.3  # it buys real coverage, not nothing


def test_binomial_bound_arithmetic():
    assert binom_pvalue(0, 10, 0.1) == pytest.approx(0.9 ** 10)
    assert upper_bound(0, 10, 0.05) == pytest.approx(1 - 0.05 ** (1 / 10))
    g = choose_level([0.99] * 5, [True] * 5, 0.1)
    assert g.level is None and g.coverage == 0.0  # too few cases to promise anything


def test_features_folder_round_trips_and_resumes(tmp_path):
    folder = ff.features_dir(tmp_path / "run.jsonl")
    assert folder.name == "run.features"
    rec = ff.new_record("c1", "cdg", "abc", "embedded", (2, 4), 100, 1.5)
    ff.append(folder, rec, np.arange(6, dtype=float).reshape(2, 3))
    ff.append(folder, ff.new_record("c2", "cdg", "abd", "embedded", (2, 4), 90, 1.0),
              np.ones((2, 3)))
    fs = ff.load_features(folder, ids=["c2", "c1"])
    assert fs.ids == ["c2", "c1"] and fs.layers == (2, 4)
    assert np.allclose(fs.layer(4)[1], [3, 4, 5])
    with pytest.raises(ff.FeatureFileError, match="no features for 1 case"):
        ff.load_features(folder, ids=["c3"])
    (folder / ff.INDEX).write_text((folder / ff.INDEX).read_text() + "{broken\n")
    with pytest.raises(ff.FeatureFileError, match=r"features.jsonl:3"):
        ff.read_index(folder)


# The rule "a probability at or above the threshold is a violation" lives in
# workbench/decision/_decide.py only (``decide``, ``violates``, ``violates_each``). Comparisons
# of a probability with a threshold elsewhere — workbench/decision/ included — are this
# pattern (a subscript or attribute on either side counts); the gate's own `--fail-on` and
# unrelated thresholds are not probabilities.
RULE = re.compile(r"(probability|\bp|\bq|\bscores?)(\[[^\]]*\])?\s*>=\s*"
                  r"(self\.|rule\.|s\.|setting\.)?(t\b|threshold)")
HOME = ROOT / "workbench" / "decision" / "_decide.py"


def test_the_decision_rule_is_written_in_one_place():
    offenders = []
    for top in ("workbench", "pages", "components", "store"):
        for path in (ROOT / top).rglob("*.py"):
            if path == HOME:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if RULE.search(code) and '"""' not in code and "``" not in code:
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "decide with workbench.decision.decide:\n" + "\n".join(offenders)


def test_the_rule_pattern_finds_what_it_is_for():
    for line in ("decided = q[ok] >= threshold", "if p >= setting.threshold:",
                 "flag = probability >= t", "hit = scores >= s.threshold"):
        assert RULE.search(line), line
    assert not RULE.search("if level >= 0.5:")


def test_the_package_face_lists_what_it_exports_and_hides_its_modules():
    import workbench.decision as face

    assert sorted(face.__all__) == sorted(set(face.__all__))
    for name in face.__all__:
        assert hasattr(face, name), name
    # The old names are gone: no alias for the setting or the decided case.
    assert not hasattr(face, "ThresholdSetting") and not hasattr(face, "Judgement")
    private = {p.stem for p in (ROOT / "workbench" / "decision").glob("_*.py")} - {"__init__"}
    assert {"_decide", "_calibration", "_fit", "_guarantee"} <= private
    for gone in ("decide", "calibration", "fit", "guarantee"):
        assert not (ROOT / "workbench" / "decision" / f"{gone}.py").exists()
    for gone in ("calibration", "selective"):
        assert not (ROOT / "workbench" / "audit" / f"{gone}.py").exists()
