"""From violation probabilities and labels to a calibration, a decision threshold and the
pictures practitioners read: reliability, precision/recall/F1 against the threshold, and
risk against coverage.

Inputs are :class:`Scored` cases: the judge's probability, the gold answer (a CompliBench
label, an annotation label, or a reviewer's confirmed/overturned verdict) and the group the
case belongs to (its conversation). Everything that is *chosen* — the Platt calibration, the
threshold — is chosen by cross-validation grouped by conversation: the figures reported for
a choice are those of cases whose conversation was not used to make it, never of the cases
it was fitted on. The saved setting (:class:`ThresholdSetting`) is then fitted on all of
them, for cases to come.

Calibration: Platt scaling on the log-odds of the judge's probability with a slope held at
zero or above (``workbench.decision.calibration``), so it never reorders cases and never runs
backwards; with fewer than :data:`MIN_PER_CLASS` cases of either answer it is not fitted and
the raw probability is shown. Decision: a violation from the calibrated probability
``miss/(miss + false alarm)`` on (0.5 for equal costs; ``workbench.decision.decide``) — not
the threshold of best F1, which on balanced data drifts to "flag everything". The best-F1
threshold is still computed and reported (:func:`best_threshold`) for comparison. When the
out-of-fold AUROC is below 0.55 the setting is marked as not ranking cases (``ranks``), and
nothing is decided automatically under it.

Confidence of a decision: the calibrated probability that it is right (q for a violation,
1 - q for a compliant decision). "Auto-decide above c" decides the cases whose confidence is
at least c and sends the rest to review; :func:`risk_coverage` gives its accuracy at every
coverage, measured out of fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.decision.calibration import Monotone, fit_monotone
from workbench.decision.decide import (
    MIN_RANKING_AUROC,
    DecisionSetting,
    cost_threshold,
    decide,
    violates,
)
from workbench.decision.scorers import logit

MIN_PER_CLASS = 5
_EPS = 1e-4
DEFAULT_FOLDS = 5


@dataclass(frozen=True)
class Scored:
    """One labelled case: the judge's probability, whether it truly violates, its group."""

    probability: float
    violation: bool
    group: str
    case_id: str = ""


def fit_platt(scored: Sequence[Scored]) -> Monotone | None:
    """Platt scaling of the log-odds, slope >= 0, fitted on ``scored``; None when either
    answer has fewer than :data:`MIN_PER_CLASS` cases (too few to fit honestly)."""
    return fit_monotone([logit(s.probability) for s in scored], [s.violation for s in scored])


def auroc(scored: Sequence[Scored]) -> float:
    """Area under the ROC curve of the probability (nan with one answer only)."""
    y = [s.violation for s in scored]
    if len(set(y)) < 2:
        return float("nan")
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, [s.probability for s in scored]))


@dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else 0.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else float("nan")


def counts(decided: Sequence[bool], truth: Sequence[bool]) -> Counts:
    tp = sum(d and t for d, t in zip(decided, truth, strict=True))
    fp = sum(d and not t for d, t in zip(decided, truth, strict=True))
    fn = sum(t and not d for d, t in zip(decided, truth, strict=True))
    return Counts(tp, fp, fn, len(truth) - tp - fp - fn)


def candidate_thresholds(probabilities: Sequence[float]) -> list[float]:
    """Midpoints between consecutive distinct probabilities, plus the ends: every way to
    split the cases by a threshold, each once."""
    ps = sorted(set(round(float(p), 6) for p in probabilities))
    if not ps:
        return [0.5]
    mids = [(a + b) / 2 for a, b in zip(ps, ps[1:], strict=False)]
    return [max(0.0, ps[0] - _EPS), *mids, min(1.0, ps[-1] + _EPS)]


def best_threshold(scored: Sequence[Scored]) -> float:
    """The threshold with the best violation-F1 on ``scored`` (ties: the one nearest 0.5)."""
    truth = [s.violation for s in scored]
    best: tuple[float, float, float] | None = None
    for t in candidate_thresholds([s.probability for s in scored]):
        f1 = counts([violates(s.probability, t) for s in scored], truth).f1
        key = (f1, -abs(t - 0.5))
        if best is None or key > best[:2]:
            best = (*key, t)
    return round(best[2], 6) if best else 0.5


def threshold_curve(scored: Sequence[Scored]) -> list[dict[str, float]]:
    """Precision, recall and F1 of deciding ``p >= t``, for every distinct split."""
    truth = [s.violation for s in scored]
    rows = []
    for t in candidate_thresholds([s.probability for s in scored]):
        c = counts([violates(s.probability, t) for s in scored], truth)
        rows.append({"threshold": round(t, 6), "precision": c.precision, "recall": c.recall,
                     "f1": c.f1, "decided_violation": c.tp + c.fp})
    return rows


def reliability(probabilities: Sequence[float], truth: Sequence[bool],
                bins: int = 10) -> list[dict[str, float]]:
    """Equal-width bins of the probability: mean probability, share of true violations, count."""
    rows = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = [(p, t) for p, t in zip(probabilities, truth, strict=True)
                  if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if inside:
            rows.append({"bin_low": lo, "bin_high": hi,
                         "mean_probability": float(np.mean([p for p, _ in inside])),
                         "violation_rate": float(np.mean([t for _, t in inside])),
                         "cases": len(inside)})
    return rows


def confidence(q: float, decided_violation: bool) -> float:
    """The calibrated probability that the decision is right."""
    return q if decided_violation else 1.0 - q


@dataclass
class OutOfFold:
    """Each case as decided by a calibration fitted without its conversation."""

    scored: list[Scored]
    settings: list[DecisionSetting]  # the fold's setting, per case
    folds: int

    def decisions(self) -> list[Any]:
        return [decide(st, probability=s.probability)
                for s, st in zip(self.scored, self.settings, strict=True)]

    @property
    def decided(self) -> list[bool]:
        return [d.violation for d in self.decisions()]

    @property
    def calibrated(self) -> list[float]:
        return [d.probability for d in self.decisions()]

    @property
    def confidences(self) -> list[float]:
        return [d.confidence for d in self.decisions()]


def grouped_folds(scored: Sequence[Scored], folds: int) -> list[tuple[list[int], list[int]]]:
    """(train, test) index lists, no conversation in both (sklearn's GroupKFold)."""
    from sklearn.model_selection import GroupKFold

    groups = [s.group or s.case_id for s in scored]
    k = min(folds, len(set(groups)))
    if k < 2:
        raise ValueError("cross-validation needs cases from at least two conversations")
    split = GroupKFold(n_splits=k).split(np.zeros(len(scored)), groups=groups)
    return [(list(tr), list(te)) for tr, te in split]


def _calibrated_setting(scored: Sequence[Scored], threshold: float) -> DecisionSetting:
    cal = fit_platt(scored)
    if cal is None:
        return DecisionSetting(DEFAULT_RAW_THRESHOLD)
    return DecisionSetting(threshold, {"a": cal.a, "b": cal.b}, ranks=cal.ranks)


def out_of_fold(scored: Sequence[Scored], folds: int = DEFAULT_FOLDS,
                threshold: float = 0.5) -> OutOfFold:
    items = list(scored)
    settings = [DecisionSetting()] * len(items)
    splits = grouped_folds(items, folds)
    for train_idx, test_idx in splits:
        st = _calibrated_setting([items[i] for i in train_idx], threshold)
        for i in test_idx:
            settings[i] = st
    return OutOfFold(items, settings, len(splits))


def risk_coverage(confidences: Sequence[float], correct: Sequence[bool]) -> list[dict[str, float]]:
    """Accuracy of the most confident share of cases, for each share (most confident first;
    ties kept together)."""
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    rows, right = [], 0
    for n, i in enumerate(order, 1):
        right += bool(correct[i])
        last = n == len(order) or confidences[order[n]] != confidences[i]
        if last:
            rows.append({"coverage": n / len(order), "accuracy": right / n, "cases": n,
                         "min_confidence": confidences[i]})
    return rows


def accuracy_at_coverage(confidences: Sequence[float], correct: Sequence[bool], share: float) -> float:
    """Accuracy of the ``share`` most confident cases (at least one).

    When the cut falls inside a group of equal confidences, the group's places are filled at
    its mean accuracy (the expectation over every way of breaking the tie), so the figure does
    not depend on the order the cases came in: a judge that gives every case the same
    confidence scores its overall accuracy, not that of whichever cases happened to be first."""
    k = max(1, round(share * len(confidences)))
    cut = sorted(confidences, reverse=True)[k - 1]
    above = [bool(r) for c, r in zip(confidences, correct, strict=True) if c > cut]
    tied = [bool(r) for c, r in zip(confidences, correct, strict=True) if c == cut]
    return (sum(above) + (k - len(above)) * sum(tied) / len(tied)) / k


DEFAULT_RAW_THRESHOLD = 0.5
ThresholdSetting = DecisionSetting  # the name the callers knew; one type (workbench.decision)


def fit_setting(scored: Sequence[Scored], folds: int = DEFAULT_FOLDS,
                bare: Sequence[bool] | None = None, miss_cost: float = 1.0,
                false_alarm_cost: float = 1.0, **about: Any) -> DecisionSetting:
    """The calibration and decision for cases to come, fitted on all of ``scored``, with the
    out-of-fold figures that say how well such a choice does (``bare``: the judge's own
    yes/no verdicts, for comparison). ``about``: what the cases were (mode, strategy...)."""
    items = list(scored)
    if not items:
        raise ValueError("no labelled case with a probability to choose a threshold from")
    truth = [s.violation for s in items]
    threshold = cost_threshold(miss_cost, false_alarm_cost)
    oof = out_of_fold(items, folds, threshold)
    decided = oof.decided
    correct = [d == t for d, t in zip(decided, truth, strict=True)]
    c = counts(decided, truth)
    area = auroc(items)
    cv: dict[str, Any] = {
        "folds": oof.folds, "grouped_by": "conversation",
        "auroc": area, "f1": c.f1, "precision": c.precision, "recall": c.recall,
        "accuracy": c.accuracy,
        "accuracy_most_confident_half": accuracy_at_coverage(oof.confidences, correct, 0.5),
        "best_f1_threshold": best_threshold(items),
    }
    if bare is not None:
        b = counts(list(bare), truth)
        cv.update(bare_f1=b.f1, bare_accuracy=b.accuracy)
    setting = _calibrated_setting(items, threshold)
    setting.ranks = setting.ranks and not (area == area and area < MIN_RANKING_AUROC)
    setting.costs = {"miss": float(miss_cost), "false_alarm": float(false_alarm_cost)}
    setting.fitted_on = {"cases": len(items), "violations": sum(truth),
                         "groups": len({s.group or s.case_id for s in items}), **about}
    setting.cross_validated = cv
    return setting


def review_truth(decision: str, judge_violation: bool | None) -> bool | None:
    """What a reviewer's decision says the right answer was: a confirmed verdict (or one
    whose verdict is right but whose cited rule is not) stands, an overturned one flips;
    None when the judged verdict is unknown or the decision says nothing of it."""
    if judge_violation is None:
        return None
    if decision in ("confirm", "wrong-rule", "wrong_rule"):
        return bool(judge_violation)
    if decision == "overturn":
        return not judge_violation
    return None


def scored_traces(traces: Sequence[Any], truth: dict[str, bool]) -> tuple[list[Scored], list[bool]]:
    """The labelled traces (``truth``: case id -> violation) whose verdict has a probability,
    as :class:`Scored` grouped by conversation, and their bare verdicts (same order)."""
    scored, bare = [], []
    for t in traces:
        v = t.verdict
        if v is None or v.probability is None or t.id not in truth:
            continue
        scored.append(Scored(float(v.probability), bool(truth[t.id]), t.session or t.id, t.id))
        bare.append(bool(v.violation))
    return scored, bare
