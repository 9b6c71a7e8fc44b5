"""Fit a decision setting on labelled cases: the activation scorer chosen by grouped
cross-validation, its monotone calibration fitted on out-of-fold scores (the scorer's
in-sample scores are over-confident), the cost threshold, and — when the analyst asks for
one — the auto-decide level with its error-rate guarantee. The figures saved with it are out
of fold: each case scored by a scorer chosen and fitted without its conversation."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.decision.calibration import fit_monotone
from workbench.decision.decide import MIN_RANKING_AUROC, DecisionSetting, cost_threshold
from workbench.decision.guarantee import DEFAULT_DELTA, choose_level
from workbench.decision.learn import (
    DEFAULT_FOLDS,
    Labelled,
    auroc,
    calibrated_oof,
    choose,
    fit_config,
    nested_scores,
    oof_scores,
)
from workbench.decision.scorers import KINDS, logit


def guarantee_dict(q_oof: np.ndarray, truth: np.ndarray, threshold: float, alpha: float,
                   delta: float = DEFAULT_DELTA) -> dict[str, Any]:
    """The auto-decide level chosen on out-of-fold calibrated probabilities."""
    ok = ~np.isnan(q_oof)
    q, y = q_oof[ok], truth[ok]
    decided = q >= threshold
    conf = np.where(decided, q, 1 - q)
    g = choose_level(conf, decided == y, alpha, delta)
    return {"alpha": alpha, "delta": delta, "level": g.level, "coverage": g.coverage,
            "errors": g.errors, "decided": g.decided, "bound": g.bound, "cases": g.cases}


def _figures(scores: np.ndarray, data: Labelled, threshold: float, folds: int) -> dict[str, Any]:
    truth = data.violation
    q = calibrated_oof(scores, truth, data.groups, folds)
    ok = ~np.isnan(q)
    decided = q[ok] >= threshold
    right = decided == truth[ok]
    conf = np.where(decided, q[ok], 1 - q[ok])
    order = np.argsort(-conf, kind="stable")
    half = max(1, round(ok.sum() / 2))
    tp = int((decided & truth[ok]).sum())
    fp = int((decided & ~truth[ok]).sum())
    fn = int((~decided & truth[ok]).sum())
    return {"auroc": auroc(scores[~np.isnan(scores)], truth[~np.isnan(scores)]),
            "accuracy": float(right.mean()) if ok.any() else float("nan"),
            "f1": 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else float("nan"),
            "accuracy_most_confident_half": float(right[order[:half]].mean()) if ok.any() else float("nan"),
            "q": q}


def fit_activation_setting(data: Labelled, *, folds: int = DEFAULT_FOLDS,
                           kinds: tuple[str, ...] = KINDS, alpha: float | None = None,
                           miss_cost: float = 1.0, false_alarm_cost: float = 1.0,
                           **about: Any) -> DecisionSetting:
    """A setting whose score is the chosen activation scorer (see the module doc)."""
    threshold = cost_threshold(miss_cost, false_alarm_cost)
    choice = choose(data, kinds, folds=folds)
    scorer = fit_config(data, choice.config, folds)
    oof = oof_scores(data, choice.config, folds)
    ok = ~np.isnan(oof)
    cal = fit_monotone(oof[ok], data.violation[ok])
    nested, configs = nested_scores(data, kinds=kinds, folds=folds)
    fig = _figures(nested, data, threshold, folds)
    verbal_known = all(p is not None for p in data.verbal)
    verbal_auroc = (auroc(np.array([logit(p) for p in data.verbal]), data.violation)
                    if verbal_known else float("nan"))
    ranks = bool(cal is not None and cal.ranks and fig["auroc"] >= MIN_RANKING_AUROC)
    setting = DecisionSetting(
        threshold=threshold,
        calibration=None if cal is None else {"a": cal.a, "b": cal.b},
        scorer=scorer.to_dict(),
        ranks=ranks,
        costs={"miss": float(miss_cost), "false_alarm": float(false_alarm_cost)},
        fitted_on={"cases": len(data), "violations": int(data.violation.sum()),
                   "groups": len(set(data.groups)), "scorer": choice.config.label(),
                   "layers": list(data.layers), **about},
        cross_validated={
            "folds": folds, "grouped_by": "conversation", "nested": True,
            "auroc": fig["auroc"], "verbal_auroc": verbal_auroc, "f1": fig["f1"],
            "accuracy": fig["accuracy"],
            "accuracy_most_confident_half": fig["accuracy_most_confident_half"],
            "chosen_per_fold": [c.label() for c in configs],
            "choice_auroc": choice.auroc,
        },
    )
    if alpha is not None and ranks:
        setting.auto = guarantee_dict(fig["q"], data.violation, threshold, alpha)
    return setting


def add_verbal_guarantee(setting: DecisionSetting, probabilities: list[float], truth: list[bool],
                         groups: list[str], alpha: float, folds: int = DEFAULT_FOLDS) -> None:
    """The guarantee of a verbal-probability setting, from out-of-fold calibrated
    probabilities (nothing is auto-decided when the setting does not rank)."""
    if not setting.ranks:
        return
    scores = np.array([logit(p) for p in probabilities])
    y = np.array(truth, dtype=bool)
    q = calibrated_oof(scores, y, groups, folds)
    setting.auto = guarantee_dict(q, y, setting.threshold, alpha)
