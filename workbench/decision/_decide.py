"""The one place a case's score becomes a decision: violation, compliant, or sent to a person.

A :class:`DecisionSetting` (saved per dataset or policy, versioned, ``store.thresholds``)
says where the score comes from (the judge's verbal probability, or an activation scorer
fitted on labelled cases), how it is calibrated (monotone: it never reorders cases), the
probability from which a case is a violation (from the costs of a missed violation and a
false alarm), and — when an analyst asked for one — the confidence from which a case is
decided automatically with a guaranteed error rate. :func:`decide` applies it;
:func:`judgement` reads a trace (or a bare verdict) through it. Everything else — the decided
record of a case (``workbench.decision._verdict``), the fits' out-of-fold figures, metrics —
calls these; ``tests/test_decision`` fails when ``p >= threshold`` is written anywhere else,
``workbench/decision/`` included.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from workbench.decision._calibration import Monotone
from workbench.decision.scorers import logit

MIN_RANKING_AUROC = 0.55
DEFAULT_THRESHOLD = 0.5


class Outcome(StrEnum):
    VIOLATION = "violation"
    COMPLIANT = "compliant"


class ScoreSource(StrEnum):
    VERBAL = "verbal"  # the judge's P(violation) (log-probabilities or sampled share)
    ACTIVATIONS = "activations"  # a scorer over the judge's hidden states
    VERDICT = "verdict"  # neither known: the judge's yes/no stands


def cost_threshold(miss_cost: float = 1.0, false_alarm_cost: float = 1.0) -> float:
    """The calibrated probability from which calling a violation costs less than not:
    ``false_alarm / (false_alarm + miss)``."""
    if miss_cost <= 0 or false_alarm_cost <= 0:
        raise ValueError("the costs of a missed violation and of a false alarm must be > 0")
    return false_alarm_cost / (false_alarm_cost + miss_cost)


@dataclass
class DecisionSetting:
    """What is saved and applied (see the module doc). ``threshold`` is on the calibrated
    probability of a violation; ``calibration`` maps the score (log-odds of the verbal
    probability, or the activation scorer's output) to it."""

    threshold: float = DEFAULT_THRESHOLD
    calibration: dict[str, float] | None = None  # {"a" >= 0, "b"}
    scorer: dict[str, Any] | None = None  # workbench.decision.scorers, None: verbal
    ranks: bool = True  # out-of-fold AUROC >= MIN_RANKING_AUROC (or not measured)
    auto: dict[str, Any] | None = None  # the guarantee: alpha, delta, level, coverage, bound...
    costs: dict[str, float] = field(default_factory=lambda: {"miss": 1.0, "false_alarm": 1.0})
    fitted_on: dict[str, Any] = field(default_factory=dict)
    cross_validated: dict[str, Any] = field(default_factory=dict)
    # Not saved: the scorer's outputs for the cases at hand, (case id, strategy) -> score,
    # attached by whoever read their activations (``workbench.decision.apply``).
    case_scores: dict[tuple[str, str], float] = field(default_factory=dict, compare=False,
                                                      repr=False)

    def score_of(self, case_id: str, strategy: str) -> float | None:
        return self.case_scores.get((case_id, strategy)) if self.scorer is not None else None

    @property
    def source(self) -> ScoreSource:
        return ScoreSource.ACTIVATIONS if self.scorer else ScoreSource.VERBAL

    def monotone(self) -> Monotone | None:
        return Monotone(**self.calibration) if self.calibration else None

    @property
    def auto_level(self) -> float | None:
        """The confidence from which a case is decided automatically; None: never (no
        guarantee asked for, or the score does not rank cases here)."""
        if not self.ranks or not self.auto:
            return None
        level = self.auto.get("level")
        return float(level) if level is not None else None

    def to_dict(self) -> dict[str, Any]:
        out = {"scale": "calibrated", **asdict(self)}
        out.pop("case_scores")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecisionSetting:
        t = data.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 <= t <= 1.0:
            raise ValueError("a decision setting needs 'threshold' between 0 and 1")
        cal = data.get("calibration")
        if cal is not None and not (isinstance(cal, dict) and set(cal) == {"a", "b"}):
            raise ValueError("'calibration' must be {'a', 'b'} or null")
        ranks = bool(data.get("ranks", True))
        threshold = float(t)
        if data.get("scale") != "calibrated":
            # Saved before the decision had one home: a threshold on the raw probability and
            # a Platt fit with no sign constraint. A negative slope ran the scale backwards:
            # it is dropped and the setting marked as not ranking; a positive one carries the
            # threshold over to the calibrated scale (the same cases decided).
            if cal is not None:
                if float(cal["a"]) <= 0:
                    cal, ranks = None, False
                else:
                    threshold = Monotone(float(cal["a"]), float(cal["b"]))(logit(threshold))
        elif cal is not None:
            Monotone(float(cal["a"]), float(cal["b"]))  # refuses a negative slope
        scorer = data.get("scorer")
        if scorer is not None and not isinstance(scorer, dict):
            raise ValueError("'scorer' must be a saved scorer or null")
        auto = data.get("auto")
        costs = data.get("costs") or {"miss": 1.0, "false_alarm": 1.0}
        return cls(threshold, None if cal is None else {"a": float(cal["a"]), "b": float(cal["b"])},
                   scorer, ranks, dict(auto) if auto else None,
                   {k: float(v) for k, v in costs.items()},
                   dict(data.get("fitted_on") or {}), dict(data.get("cross_validated") or {}))


DEFAULT_SETTING = DecisionSetting()


@dataclass(frozen=True)
class Decided:
    """One case, decided. ``probability`` and ``confidence`` are None when the case had no
    score (the judge's yes/no stands, ``source`` says so)."""

    outcome: Outcome
    probability: float | None  # calibrated P(violation) (the raw one without a calibration)
    confidence: float | None  # P(the outcome is right)
    source: ScoreSource
    calibrated: bool
    automatic: bool  # confidence at or above the guaranteed level: no person needed
    raw: float | None = None  # the score as read (the judge's probability, or the scorer's)

    @property
    def violation(self) -> bool:
        return self.outcome is Outcome.VIOLATION

    @property
    def uncertainty(self) -> float:
        return 1.0 - self.confidence if self.confidence is not None else 1.0


def decide(setting: DecisionSetting | None, *, probability: float | None = None,
           activation: float | None = None, verdict: bool | None = None) -> Decided | None:
    """Decide a case from its scores under ``setting`` (None: threshold 0.5 on the judge's
    probability, uncalibrated). ``probability``: the judge's verbal P(violation);
    ``activation``: the setting's scorer's output for the case; ``verdict``: the judge's
    yes/no, used only when the setting's score is unknown. None when nothing is known."""
    s = setting or DEFAULT_SETTING
    cal = s.monotone()
    if s.scorer is not None and activation is not None:
        raw, source = float(activation), ScoreSource.ACTIVATIONS
        q = cal(raw) if cal else _sigmoid(raw)
    elif s.scorer is None and probability is not None:
        raw, source = float(probability), ScoreSource.VERBAL
        q = cal(logit(raw)) if cal else raw
    elif verdict is not None:
        out = Outcome.VIOLATION if verdict else Outcome.COMPLIANT
        return Decided(out, None, None, ScoreSource.VERDICT, False, False)
    else:
        return None
    violation = violates(q, s.threshold)
    conf = confidence_of(q, violation)
    level = s.auto_level
    return Decided(Outcome.VIOLATION if violation else Outcome.COMPLIANT, q, conf, source,
                   cal is not None, level is not None and conf >= level, raw)


def _sigmoid(z: float) -> float:
    import math

    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def violates(probability: float, threshold: float) -> bool:
    """The rule itself: a probability at or above the threshold is a violation. Everything
    that sweeps thresholds (curves, the best-F1 search) calls this, never its own ``>=``."""
    return float(probability) >= float(threshold)


def violates_each(probabilities: Any, threshold: float) -> np.ndarray:
    """:func:`violates` over an array of calibrated probabilities (NaN: not a violation),
    for the out-of-fold figures of a fit."""
    return np.asarray(probabilities, dtype=float) >= float(threshold)


def automatic_each(confidences: Any, level: float) -> np.ndarray:
    """Which decisions an auto-decide ``level`` takes from people: confidence at or above it
    (what :func:`decide` says of one case as ``automatic``), for the guarantee's sweeps."""
    return np.asarray(confidences, dtype=float) >= float(level)


def confidence_of(probability: Any, violation: Any) -> Any:
    """The calibrated probability that a decision is right: ``q`` for a violation, ``1 - q``
    for a compliant decision (scalars or arrays alike)."""
    return np.where(violation, probability, 1.0 - np.asarray(probability, dtype=float)) \
        if isinstance(probability, np.ndarray) else (probability if violation else 1.0 - probability)


def judgement(subject: Any, setting: DecisionSetting | None = None,
              activation: float | None = None) -> Decided | None:
    """How ``setting`` decides ``subject``'s score: an :class:`~workbench.audit.trace.AuditTrace`
    (its activation score from the setting's ``case_scores`` for the trace's case and
    strategy) or a bare verdict (its probability, or ``activation``: the setting's scorer's
    output for the case). None when the setting's score is unknown for it — the caller then
    says so (the decided record sends such a case to review)."""
    s = setting or DEFAULT_SETTING
    verdict = subject
    if hasattr(subject, "verdict") and hasattr(subject, "strategy"):  # an AuditTrace
        verdict = subject.verdict
        if activation is None:
            activation = s.score_of(subject.id, subject.strategy)
    p = getattr(verdict, "probability", None)
    if s.scorer is not None and activation is None:
        return None
    if s.scorer is None and p is None:
        return None
    return decide(s, probability=p, activation=activation)
