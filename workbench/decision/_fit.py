"""Fit a decision setting on labelled cases: one path for every score.

A score is one number per case, larger = more likely a violation. The judge's verbal
probability is the one-feature scorer ``logit(p)``: nothing is learned, so its scores are
out of sample as they are. An activation scorer is chosen by cross-validation grouped by
conversation (:mod:`workbench.decision.learn`); its calibration is fitted on out-of-fold
scores (in-sample ones are over-confident) and its figures on *nested* scores (each case
scored by a scorer chosen and fitted without its conversation).

From there both go one way (:func:`_settle`): the monotone calibration (slope >= 0,
``_calibration``), the threshold of the costs (``_decide.cost_threshold``), and the figures
saved with the setting, all out of fold (:func:`out_of_fold`): each case's calibrated
probability from a calibration fitted without its conversation (``learn.calibrated_oof``, the
one grouped splitter ``learn.grouped_splits``; the score's own sigmoid where a fold is too
small to fit), decided by ``_decide.violates_each``, counted by ``_measures.counts``, ranked by
``learn.auroc``. When the analyst asks for one, the auto-decide level and its guarantee are
chosen on those out-of-fold probabilities (``_guarantee``). A score whose out-of-fold AUROC is
below ``MIN_RANKING_AUROC``, or whose calibration would run backwards, is saved as not
ranking (``ranks`` False): nothing is then decided automatically under it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.decision._calibration import fit_monotone
from workbench.decision._decide import (
    MIN_RANKING_AUROC,
    DecisionSetting,
    confidence_of,
    cost_threshold,
    violates_each,
)
from workbench.decision._guarantee import DEFAULT_DELTA, choose_level
from workbench.decision._labelled import Scored
from workbench.decision._measures import accuracy_at_coverage, best_threshold, counts
from workbench.decision.learn import (
    DEFAULT_FOLDS,
    Labelled,
    auroc,
    calibrated_oof,
    choose,
    fit_config,
    grouped_splits,
    nested_scores,
    oof_scores,
)
from workbench.decision.scorers import KINDS, logit


@dataclass(frozen=True)
class OutOfFold:
    """Cases with a score, each decided by a calibration fitted without its conversation."""

    scores: np.ndarray  # the score read (log-odds of the verbal probability, or the scorer's)
    truth: np.ndarray  # bool
    q: np.ndarray  # calibrated P(violation), out of fold
    threshold: float

    @property
    def decided(self) -> np.ndarray:
        return violates_each(self.q, self.threshold)

    @property
    def confidences(self) -> np.ndarray:
        return confidence_of(self.q, self.decided)

    @property
    def correct(self) -> np.ndarray:
        return self.decided == self.truth


def out_of_fold(scores: Sequence[float], truth: Sequence[bool], groups: Sequence[str],
                threshold: float, folds: int = DEFAULT_FOLDS, seed: int = 0) -> OutOfFold:
    """The out-of-fold decisions of ``scores`` (cases without a score, NaN, left out)."""
    s = np.asarray(scores, dtype=float)
    keep = ~np.isnan(s)
    s, y = s[keep], np.asarray(truth, dtype=bool)[keep]
    g = [groups[i] for i in np.flatnonzero(keep)]
    q = (calibrated_oof(s, y, g, folds, seed) if len(set(g)) >= 2
         else np.full(len(s), np.nan))
    q = np.where(np.isnan(q), 1.0 / (1.0 + np.exp(-np.clip(s, -50, 50))), q)
    return OutOfFold(s, y, q, float(threshold))


def figures(oof: OutOfFold) -> dict[str, Any]:
    """The figures saved with a setting: AUROC of the score, and F1, precision, recall,
    accuracy and the accuracy of the most confident half of its out-of-fold decisions."""
    if not len(oof.truth):
        return {"auroc": math.nan, "f1": math.nan, "precision": math.nan, "recall": math.nan,
                "accuracy": math.nan, "accuracy_most_confident_half": math.nan}
    c = counts(oof.decided, oof.truth)
    return {"auroc": auroc(oof.scores, oof.truth), "f1": c.f1, "precision": c.precision,
            "recall": c.recall, "accuracy": c.accuracy,
            "accuracy_most_confident_half": accuracy_at_coverage(
                list(oof.confidences), list(oof.correct), 0.5)}


GUARANTEES = ("levels", "split")


def guarantee_dict(q_oof: np.ndarray, truth: np.ndarray, threshold: float, alpha: float,
                   delta: float = DEFAULT_DELTA, *, method: str = "levels",
                   groups: Sequence[str] | None = None,
                   scores: Sequence[float] | None = None) -> dict[str, Any]:
    """The auto-decide level: ``levels``, ten levels tested at δ/10 on out-of-fold calibrated
    probabilities (``_guarantee.choose_level``), or ``split``, the calibration and the level
    chosen on half the conversations and certified on the other at δ
    (``_labelling.split_scores_guarantee``; needs ``groups``, and the raw ``scores`` — without
    them the log-odds of ``q_oof``, whose cross-fitting saw the other half's labels): the
    same promise from fewer labels."""
    from workbench.decision._labelling import split_scores_guarantee

    if method not in GUARANTEES:
        raise ValueError(f"guarantee method {method!r} is not one of {', '.join(GUARANTEES)}")
    q_oof = np.asarray(q_oof, dtype=float)
    ok = ~np.isnan(q_oof)
    q, y = q_oof[ok], np.asarray(truth, dtype=bool)[ok]
    decided = violates_each(q, threshold)
    conf = confidence_of(q, decided)
    if method == "split":
        if groups is None:
            raise ValueError("the split guarantee needs each case's conversation")
        kept = [g for g, k in zip(groups, ok, strict=True) if k]
        raw = (np.asarray(scores, dtype=float)[ok] if scores is not None
               else np.log(np.clip(q, 1e-6, 1 - 1e-6) / np.clip(1 - q, 1e-6, 1)))
        g = split_scores_guarantee(raw, y, kept, threshold, alpha, delta)
    else:
        g = choose_level(conf, decided == y, alpha, delta)
    return {"alpha": alpha, "delta": delta, "level": g.level, "coverage": g.coverage,
            "errors": g.errors, "decided": g.decided, "bound": g.bound, "cases": g.cases,
            "method": method}


def _settle(fit_scores: np.ndarray, figure_scores: np.ndarray, truth: np.ndarray,
            groups: Sequence[str], *, folds: int, miss_cost: float, false_alarm_cost: float,
            alpha: float | None, scorer: dict[str, Any] | None, fitted_on: dict[str, Any],
            measured: dict[str, Any], guarantee: str = "levels") -> DecisionSetting:
    """The setting of a score (see the module doc): calibration on ``fit_scores``, figures
    and guarantee on ``figure_scores`` out of fold."""
    threshold = cost_threshold(miss_cost, false_alarm_cost)
    ok = ~np.isnan(fit_scores)
    cal = fit_monotone(fit_scores[ok], truth[ok])
    oof = out_of_fold(figure_scores, truth, groups, threshold, folds)
    fig = figures(oof)
    area = fig["auroc"]
    if scorer is None:  # the judge's probability: shown raw when too few labels to calibrate
        ranks = (cal is None or cal.ranks) and not area < MIN_RANKING_AUROC
    else:  # a scorer's raw output means nothing uncalibrated
        ranks = cal is not None and cal.ranks and area >= MIN_RANKING_AUROC
    setting = DecisionSetting(
        threshold=threshold,
        calibration=None if cal is None else {"a": cal.a, "b": cal.b},
        scorer=scorer, ranks=bool(ranks),
        costs={"miss": float(miss_cost), "false_alarm": float(false_alarm_cost)},
        fitted_on={"cases": len(truth), "violations": int(np.sum(truth)),
                   "groups": len(set(groups)), **fitted_on},
        cross_validated={"folds": folds, "grouped_by": "conversation", **fig, **measured},
    )
    if alpha is not None and setting.ranks:
        kept = [g for g, k in zip(groups, ~np.isnan(np.asarray(figure_scores, dtype=float)),
                                  strict=True) if k]
        setting.auto = guarantee_dict(oof.q, oof.truth, threshold, alpha, method=guarantee,
                                      groups=kept, scores=oof.scores)
    return setting


def fit_verbal_setting(scored: Sequence[Scored], folds: int = DEFAULT_FOLDS,
                       bare: Sequence[bool] | None = None, *, alpha: float | None = None,
                       miss_cost: float = 1.0, false_alarm_cost: float = 1.0,
                       guarantee: str = "levels", **about: Any) -> DecisionSetting:
    """A setting that reads the judge's verbal probability (see the module doc). ``bare``:
    the judge's own yes/no verdicts, same order, for comparison; ``about``: what the cases
    were (judge mode, strategy...). ValueError without a case."""
    items = list(scored)
    if not items:
        raise ValueError("no labelled case with a probability to choose a threshold from")
    truth = np.array([s.violation for s in items], dtype=bool)
    scores = np.array([logit(s.probability) for s in items])
    measured: dict[str, Any] = {
        "best_f1_threshold": best_threshold([s.probability for s in items], list(truth))}
    if bare is not None:
        b = counts(list(bare), list(truth))
        measured.update(bare_f1=b.f1, bare_accuracy=b.accuracy)
    return _settle(scores, scores, truth, [s.group or s.case_id for s in items], folds=folds,
                   miss_cost=miss_cost, false_alarm_cost=false_alarm_cost, alpha=alpha,
                   scorer=None, fitted_on=dict(about), measured=measured, guarantee=guarantee)


def fit_activation_setting(data: Labelled, *, folds: int = DEFAULT_FOLDS,
                           kinds: tuple[str, ...] = KINDS, alpha: float | None = None,
                           miss_cost: float = 1.0, false_alarm_cost: float = 1.0,
                           guarantee: str = "levels", **about: Any) -> DecisionSetting:
    """A setting whose score is the chosen activation scorer (see the module doc)."""
    choice = choose(data, kinds, folds=folds)
    scorer = fit_config(data, choice.config, folds)
    oof = oof_scores(data, choice.config, folds)
    nested, configs = nested_scores(data, kinds=kinds, folds=folds)
    verbal_known = all(p is not None for p in data.verbal)
    verbal_auroc = (auroc(np.array([logit(p) for p in data.verbal]), data.violation)
                    if verbal_known else float("nan"))
    return _settle(oof, nested, data.violation, data.groups, folds=folds, miss_cost=miss_cost,
                   false_alarm_cost=false_alarm_cost, alpha=alpha, scorer=scorer.to_dict(),
                   fitted_on={"scorer": choice.config.label(), "layers": list(data.layers),
                              **about},
                   measured={"nested": True, "verbal_auroc": verbal_auroc,
                             "chosen_per_fold": [c.label() for c in configs],
                             "choice_auroc": choice.auroc}, guarantee=guarantee)


def fit_adapted_setting(data: Labelled, prior: DecisionSetting, *, folds: int = DEFAULT_FOLDS,
                        alpha: float | None = None, miss_cost: float = 1.0,
                        false_alarm_cost: float = 1.0, guarantee: str = "levels",
                        **about: Any) -> DecisionSetting:
    """A setting that starts from ``prior``'s probe (the built-in scorer) and adapts to these
    labels only where grouped cross-validation says the adapted probe ranks them better
    (``_prior.adapt``). Its calibration and figures are fitted on scores each case got without
    its own label: the prior's own (it never saw these cases), or the adapted probe's out of
    fold. ValueError when ``prior`` is not a probe over a feature these cases hold."""
    from workbench.decision._prior import adapt, fit_prior_probe, prior_probe

    probe = prior_probe(prior)
    if probe is None or probe.layer not in data.layers:
        raise ValueError("the prior's scorer reads a feature these activations do not hold")
    x = data.at(probe.layer)
    y = data.violation
    chosen = adapt(x, y, data.groups, probe, folds=folds)
    if chosen.replaced:  # the calibration's scores: the chosen C, out of fold
        scores = np.full(len(data), np.nan)
        for tr, te in grouped_splits(data.groups, folds, 0):
            if len(set(y[tr].tolist())) == 2:
                scores[te] = fit_prior_probe(x[tr], y[tr], probe, chosen.c).score(x[te])
    else:
        scores = probe.score(x)
    # The figures' scores: the whole choice (keep or adapt, which C) made again without each
    # case's conversation, so they are not flattered by the choice (nested).
    nested = np.full(len(data), np.nan)
    for tr, te in grouped_splits(data.groups, folds, 1):
        inner = adapt(x[tr], y[tr], [data.groups[i] for i in tr], probe, folds=folds)
        nested[te] = inner.scorer.score(x[te])
    verbal_known = all(p is not None for p in data.verbal)
    verbal_auroc = (auroc(np.array([logit(p) for p in data.verbal]), data.violation)
                    if verbal_known else float("nan"))
    how = (f"adapted from the built-in scorer (C={chosen.c:g}): it ranks these labels better "
           f"in {chosen.p_better:.0%} of conversation-bootstrap draws" if chosen.replaced else
           "the built-in scorer, recalibrated on these labels (an adapted one did not rank them "
           "better)")
    return _settle(scores, nested, data.violation, data.groups, folds=folds, miss_cost=miss_cost,
                   false_alarm_cost=false_alarm_cost, alpha=alpha,
                   scorer=chosen.scorer.to_dict(),
                   fitted_on={"scorer": how, "layers": list(data.layers), "prior": "built-in",
                              **about},
                   measured={"nested": True, "verbal_auroc": verbal_auroc,
                             "builtin_auroc": chosen.builtin_auroc,
                             "adapted_auroc": chosen.adapted_auroc,
                             "p_better": chosen.p_better, "replaced": chosen.replaced,
                             "tried": chosen.tried}, guarantee=guarantee)


def add_verbal_guarantee(setting: DecisionSetting, probabilities: list[float], truth: list[bool],
                         groups: list[str], alpha: float, folds: int = DEFAULT_FOLDS,
                         method: str = "levels") -> None:
    """The guarantee of a verbal-probability setting, from out-of-fold calibrated
    probabilities (nothing is auto-decided when the setting does not rank)."""
    if not setting.ranks:
        return
    oof = out_of_fold([logit(p) for p in probabilities], truth, groups, setting.threshold, folds)
    setting.auto = guarantee_dict(oof.q, oof.truth, setting.threshold, alpha, method=method,
                                  groups=groups, scores=oof.scores)
