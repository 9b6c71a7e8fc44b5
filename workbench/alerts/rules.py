"""The two kinds of alert rule and what fires them.

- ``violation``: a newly audited case whose decided record
  (``workbench.decision.decided_verdict`` under the dataset's saved setting, what every page
  shows) is a violation — or is to review because its score decided violation and no rule was
  found yet, which the alert says — at a calibrated probability of ``probability`` or more
  (``workbench.decision.violates``), on policy ``policy`` (any policy when empty). A record
  without a score (the judge's bare yes/no) fires on its label alone.
- ``share``: among the last ``window`` audited cases of the dataset (newest trace per case),
  the share whose decided record is a violation (or to review with a violation decided) is
  above ``share``. It fires when the share crosses above (not again while it stays there), so
  a run of bad batches makes one alert, not one each.

Pure: the store (``store.alerts``) hands in the traces and keeps what fired.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from workbench.audit.trace import AuditTrace
from workbench.decision import DecidedVerdict, DecisionSetting, decided_verdict, violates
from workbench.errors import WorkbenchError

Saved = tuple[int, DecisionSetting]  # a dataset's saved setting and its version


class RuleKind(StrEnum):
    VIOLATION = "violation"
    SHARE = "share"


class AlertRuleError(WorkbenchError, ValueError):
    """A rule that cannot be saved as given; the message says which value and the fix."""


@dataclass(frozen=True)
class AlertRule:
    """A saved rule (see the module doc). ``dataset``: only traces stored in it (any when
    empty). ``webhook``: where its alerts are posted (none: shown on Review only)."""

    name: str
    kind: RuleKind
    policy: str = ""
    probability: float = 0.5
    window: int = 50
    share: float = 0.2
    dataset: str = ""
    webhook: str = ""
    id: int | None = None

    def check(self) -> AlertRule:
        """The rule, or :class:`AlertRuleError` naming what is wrong."""
        if not self.name.strip():
            raise AlertRuleError("an alert rule needs a name", "give it one, e.g. --name refunds")
        if self.kind not in tuple(RuleKind):
            raise AlertRuleError(f"unknown rule kind {self.kind!r}",
                                 f"use one of {', '.join(RuleKind)}")
        if not 0.0 <= self.probability <= 1.0:
            raise AlertRuleError(f"probability {self.probability} is not between 0 and 1",
                                 "e.g. --probability 0.8")
        if not 0.0 <= self.share < 1.0:
            raise AlertRuleError(f"share {self.share} is not in [0, 1)", "e.g. --share 0.2")
        if self.window < 1:
            raise AlertRuleError(f"window {self.window} is below one case", "e.g. --last 50")
        if self.webhook and not self.webhook.startswith(("http://", "https://")):
            raise AlertRuleError(f"webhook {self.webhook[:60]!r} is not an http(s) address",
                                 "give e.g. https://hooks.example.com/alerts")
        return self

    def describe(self) -> str:
        where = f"policy {self.policy}" if self.policy else "any policy"
        scope = f" in dataset {self.dataset}" if self.dataset else ""
        if self.kind == RuleKind.VIOLATION:
            return f"a new violation with probability ≥ {self.probability:g} on {where}{scope}"
        return (f"the share of violations in the last {self.window} cases above "
                f"{self.share:.0%}{scope}")


@dataclass(frozen=True)
class Fired:
    """One alert: which rule, a key that makes it fire once (the trace for a violation, the
    crossing's newest trace for a share), and the JSON a webhook receives."""

    rule: AlertRule
    key: str
    dataset: str
    case_id: str
    summary: str
    payload: dict[str, Any] = field(default_factory=dict)


def decided_violation(trace: AuditTrace, saved: Saved | None = None,
                      at_least: float | None = None) -> DecidedVerdict | None:
    """``trace``'s decided record when it counts as a violation for an alert (see the module
    doc): a violation, or to review with a violation decided, its calibrated probability at
    or above ``at_least`` when it has one; None otherwise (compliant, not judged)."""
    record = decided_verdict(trace, saved=saved)
    if not record.outcome_violation:
        return None
    if at_least is not None and record.score is not None and not violates(record.score, at_least):
        return None
    return record


def _on_policy(rule: AlertRule, trace: AuditTrace) -> bool:
    if not rule.policy:
        return True
    return rule.policy in trace.skills


def new_violations(rule: AlertRule, traces: Iterable[AuditTrace], dataset: str,
                   saved: Saved | None = None) -> list[Fired]:
    """The alerts a ``violation`` rule fires on newly audited ``traces`` of ``dataset``,
    decided under its saved setting (``saved``, with its case scores; None: the default)."""
    if rule.kind != RuleKind.VIOLATION or (rule.dataset and rule.dataset != dataset):
        return []
    out = []
    for trace in traces:
        record = decided_violation(trace, saved, rule.probability)
        if record is None or not _on_policy(rule, trace):
            continue
        p = record.score
        said = f"probability {p:.2f}" if p is not None else "no probability (the verdict stands)"
        what = "violation" if record.violation else "likely violation, to review (no rule found yet)"
        summary = f"{rule.name}: {what} in case {trace.id} ({said}) on {', '.join(trace.skills)}"
        payload = _payload(rule, dataset, summary, {
            "case_id": trace.id, "strategy": trace.strategy, "skills": list(trace.skills),
            "label": record.label, "probability": p, "score_source": record.score_source,
            "setting_version": record.setting_version, "violated_rules": list(record.rules),
            "reason": record.reason[:500]})
        out.append(Fired(rule, f"trace:{trace.id}:{trace.strategy}", dataset, trace.id, summary,
                         payload))
    return out


def violation_share(recent: Sequence[AuditTrace], saved: Saved | None = None) -> tuple[int, int]:
    """(violations, judged) among ``recent``, each by its decided record under ``saved``."""
    judged = [t for t in recent if decided_verdict(t, saved=saved).decided is not None]
    return sum(decided_violation(t, saved) is not None for t in judged), len(judged)


def share_fired(rule: AlertRule, recent: Sequence[AuditTrace], dataset: str,
                was_above: bool, saved: Saved | None = None) -> tuple[Fired | None, bool]:
    """(the alert, whether the share is above now) for a ``share`` rule over the dataset's
    ``recent`` traces (newest last, at most ``rule.window``). Fires on crossing above only;
    too few judged cases (fewer than the window) never fire."""
    if rule.kind != RuleKind.SHARE or (rule.dataset and rule.dataset != dataset):
        return None, was_above
    recent = [t for t in recent if _on_policy(rule, t)][-rule.window:]
    bad, judged = violation_share(recent, saved)
    above = judged >= rule.window and bad > rule.share * judged
    if not above or was_above:
        return None, above
    newest = recent[-1].id
    summary = (f"{rule.name}: {bad} violations in the last {judged} cases of {dataset} "
               f"({bad / judged:.0%}, above {rule.share:.0%})")
    payload = _payload(rule, dataset, summary, {"violations": bad, "cases": judged,
                                                "share": bad / judged, "newest_case": newest})
    return Fired(rule, f"share:{newest}:{bad}/{judged}", dataset, newest, summary, payload), True


def _payload(rule: AlertRule, dataset: str, summary: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "skillcdg.alert", "rule": {"id": rule.id, "name": rule.name,
                                               "kind": str(rule.kind), "describe": rule.describe()},
            "dataset": dataset, "summary": summary, **detail}
