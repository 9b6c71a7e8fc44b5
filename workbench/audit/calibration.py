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

Threshold: the probability at or above which a case is decided a violation, maximising
violation-F1 (F1 is what the audit reports; accuracy would favour "compliant" on the usual
imbalanced sets). Calibration: Platt scaling (a logistic regression on the log-odds of the
judge's probability), monotone, so it never reorders cases; with fewer than
:data:`MIN_PER_CLASS` cases of either answer it is not fitted and the raw probability is shown.

Confidence of a decision: the calibrated probability that it is right (q for a violation,
1 - q for a compliant decision). "Auto-decide above c" decides the cases whose confidence is
at least c and sends the rest to review; :func:`risk_coverage` gives its accuracy at every
coverage, measured out of fold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

MIN_PER_CLASS = 5
DEFAULT_FOLDS = 5
_EPS = 1e-4


@dataclass(frozen=True)
class Scored:
    """One labelled case: the judge's probability, whether it truly violates, its group."""

    probability: float
    violation: bool
    group: str
    case_id: str = ""


@dataclass(frozen=True)
class Platt:
    """``calibrated(p) = sigmoid(a * logit(p) + b)``."""

    a: float
    b: float

    def __call__(self, p: float) -> float:
        z = self.a * _logit(p) + self.b
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def _logit(p: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, float(p)))
    return math.log(p / (1.0 - p))


def fit_platt(scored: Sequence[Scored]) -> Platt | None:
    """Platt scaling fitted on ``scored``; None when either answer has fewer than
    :data:`MIN_PER_CLASS` cases (too few to fit two parameters honestly)."""
    y = np.array([s.violation for s in scored], dtype=int)
    if y.sum() < MIN_PER_CLASS or (len(y) - y.sum()) < MIN_PER_CLASS:
        return None
    from sklearn.linear_model import LogisticRegression

    x = np.array([[_logit(s.probability)] for s in scored])
    model = LogisticRegression(C=1e4).fit(x, y)  # nearly unregularised: two parameters
    return Platt(float(model.coef_[0][0]), float(model.intercept_[0]))


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
        f1 = counts([s.probability >= t for s in scored], truth).f1
        key = (f1, -abs(t - 0.5))
        if best is None or key > best[:2]:
            best = (*key, t)
    return round(best[2], 6) if best else 0.5


def threshold_curve(scored: Sequence[Scored]) -> list[dict[str, float]]:
    """Precision, recall and F1 of deciding ``p >= t``, for every distinct split."""
    truth = [s.violation for s in scored]
    rows = []
    for t in candidate_thresholds([s.probability for s in scored]):
        c = counts([s.probability >= t for s in scored], truth)
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
    """Each case as scored by a threshold and calibration chosen without its conversation."""

    scored: list[Scored]
    threshold: list[float]  # the fold's threshold, per case
    calibrated: list[float]  # the fold's calibrated probability, per case
    folds: int

    @property
    def decided(self) -> list[bool]:
        return [s.probability >= t for s, t in zip(self.scored, self.threshold, strict=True)]

    @property
    def confidences(self) -> list[float]:
        return [confidence(q, d) for q, d in zip(self.calibrated, self.decided, strict=True)]


def grouped_folds(scored: Sequence[Scored], folds: int) -> list[tuple[list[int], list[int]]]:
    """(train, test) index lists, no conversation in both (sklearn's GroupKFold)."""
    from sklearn.model_selection import GroupKFold

    groups = [s.group or s.case_id for s in scored]
    k = min(folds, len(set(groups)))
    if k < 2:
        raise ValueError("cross-validation needs cases from at least two conversations")
    split = GroupKFold(n_splits=k).split(np.zeros(len(scored)), groups=groups)
    return [(list(tr), list(te)) for tr, te in split]


def out_of_fold(scored: Sequence[Scored], folds: int = DEFAULT_FOLDS) -> OutOfFold:
    items = list(scored)
    thresholds = [0.5] * len(items)
    calibrated = [s.probability for s in items]
    splits = grouped_folds(items, folds)
    for train_idx, test_idx in splits:
        train = [items[i] for i in train_idx]
        t = best_threshold(train)
        platt = fit_platt(train)
        for i in test_idx:
            thresholds[i] = t
            calibrated[i] = platt(items[i].probability) if platt else items[i].probability
    return OutOfFold(items, thresholds, calibrated, len(splits))


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


@dataclass
class ThresholdSetting:
    """What is saved (``store.thresholds``) and applied: the threshold on the judge's
    probability, the calibration shown to people, and how both were chosen."""

    threshold: float
    calibration: dict[str, float] | None = None  # {"a", "b"} of Platt scaling, or None
    fitted_on: dict[str, Any] = field(default_factory=dict)  # n, violations, groups, mode...
    cross_validated: dict[str, Any] = field(default_factory=dict)  # out-of-fold figures

    def platt(self) -> Platt | None:
        return Platt(**self.calibration) if self.calibration else None

    def calibrated(self, p: float) -> float:
        platt = self.platt()
        return platt(p) if platt else float(p)

    def decide(self, p: float) -> bool:
        return float(p) >= self.threshold

    def confidence(self, p: float) -> float:
        return confidence(self.calibrated(p), self.decide(p))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThresholdSetting:
        t = data.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 <= t <= 1.0:
            raise ValueError("a threshold setting needs 'threshold' between 0 and 1")
        cal = data.get("calibration")
        if cal is not None and not (isinstance(cal, dict) and set(cal) == {"a", "b"}):
            raise ValueError("'calibration' must be {'a', 'b'} or null")
        return cls(float(t), cal, dict(data.get("fitted_on") or {}),
                   dict(data.get("cross_validated") or {}))


def fit_setting(scored: Sequence[Scored], folds: int = DEFAULT_FOLDS,
                bare: Sequence[bool] | None = None, **about: Any) -> ThresholdSetting:
    """The threshold and calibration for cases to come, fitted on all of ``scored``, with
    the out-of-fold figures that say how well such a choice does (``bare``: the judge's own
    yes/no verdicts, for comparison). ``about``: what the cases were (mode, strategy...)."""
    items = list(scored)
    if not items:
        raise ValueError("no labelled case with a probability to choose a threshold from")
    truth = [s.violation for s in items]
    oof = out_of_fold(items, folds)
    decided = oof.decided
    correct = [d == t for d, t in zip(decided, truth, strict=True)]
    c = counts(decided, truth)
    cv: dict[str, Any] = {
        "folds": oof.folds, "grouped_by": "conversation",
        "auroc": auroc(items), "f1": c.f1, "precision": c.precision, "recall": c.recall,
        "accuracy": c.accuracy,
        "accuracy_most_confident_half": accuracy_at_coverage(oof.confidences, correct, 0.5),
        "fold_thresholds": sorted(set(round(t, 4) for t in oof.threshold)),
    }
    if bare is not None:
        b = counts(list(bare), truth)
        cv.update(bare_f1=b.f1, bare_accuracy=b.accuracy)
    platt = fit_platt(items)
    return ThresholdSetting(
        threshold=best_threshold(items),
        calibration=None if platt is None else {"a": platt.a, "b": platt.b},
        fitted_on={"cases": len(items), "violations": sum(truth),
                   "groups": len({s.group or s.case_id for s in items}), **about},
        cross_validated=cv,
    )


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
