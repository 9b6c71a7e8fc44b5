"""Dataset metrics over replayed trajectories.

- PCR (protocol completion rate): share of trajectories with accepted termination.
- RF-PCR: accepted termination with no rejected-action feedback (the contracts paper's definition):
  no step on which feedback was shown. With feedback withheld it equals PCR.
- no-rejection PCR: accepted termination and not a single rejected action, shown or not
  (what RF-PCR meant here before issue 32; with feedback shown the two are equal).
- outcome rate: share of trajectories whose outcome counts as success (outcome >= the
  threshold; tau-bench rewards are 0 or 1), among those with a known outcome.
- hint rate: agent steps on which feedback was shown / agent steps, pooled over all
  trajectories (the contracts paper's definition). Feedback is shown on a rejected step while the run
  is live; with feedback withheld (``replay(..., feedback=False)``) the rate is 0 although
  steps are still rejected, and the steps rejected after a budget ran out show none. User
  turns are never rejected and are not counted.
- mean credit: mean verified progress credit per trajectory.
- the 2x2 table: accepted termination (yes/no) x outcome (success/failure), plus a column
  for unknown outcomes.

Rates over an empty set are ``nan`` (``null`` in JSON).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.contracts.replay import ReplayReport

OUTCOME_COLUMNS = ("success", "failure", "unknown")


def outcome_class(outcome: float | None, threshold: float = 1.0) -> str:
    if outcome is None:
        return "unknown"
    return "success" if outcome >= threshold else "failure"


@dataclass(frozen=True)
class PcrOutcomeTable:
    """Trajectory counts; rows: accepted termination True/False, columns: OUTCOME_COLUMNS."""

    counts: dict[bool, dict[str, int]]

    def cell(self, accepted: bool, outcome: str) -> int:
        return self.counts[accepted][outcome]

    def rows(self) -> list[dict[str, Any]]:
        """Rows for display: ``{"accepted termination": "yes", "success": n, ...}``."""
        return [{"accepted termination": "yes" if accepted else "no", **self.counts[accepted],
                 "total": sum(self.counts[accepted].values())} for accepted in (True, False)]

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {"pcr": dict(self.counts[True]), "no_pcr": dict(self.counts[False])}


@dataclass(frozen=True)
class ContractSummary:
    n: int
    pcr: float
    rf_pcr: float
    hint_rate: float
    outcome_rate: float
    mean_credit: float
    outcome_known: int
    table: PcrOutcomeTable
    no_rejection_pcr: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n, "pcr": _num(self.pcr), "rf_pcr": _num(self.rf_pcr),
            "no_rejection_pcr": _num(self.no_rejection_pcr),
            "hint_rate": _num(self.hint_rate), "outcome_rate": _num(self.outcome_rate),
            "mean_credit": _num(self.mean_credit), "outcome_known": self.outcome_known,
            "pcr_x_outcome": self.table.to_dict(),
        }


def summarize(reports: Sequence[ReplayReport], *, success_threshold: float = 1.0) -> ContractSummary:
    """Dataset metrics of replay reports (see the module docstring for the definitions)."""
    n = len(reports)
    counts = {accepted: dict.fromkeys(OUTCOME_COLUMNS, 0) for accepted in (True, False)}
    for report in reports:
        counts[report.accepted_termination][outcome_class(report.outcome, success_threshold)] += 1
    known = [r for r in reports if r.outcome is not None]
    agent_steps = sum(r.agent_steps for r in reports)
    return ContractSummary(
        n=n,
        pcr=_rate(sum(r.accepted_termination for r in reports), n),
        rf_pcr=_rate(sum(r.rejection_feedback_free for r in reports), n),
        no_rejection_pcr=_rate(sum(r.rejection_free for r in reports), n),
        hint_rate=_rate(sum(r.hints for r in reports), agent_steps),
        outcome_rate=_rate(sum(outcome_class(r.outcome, success_threshold) == "success"
                               for r in known), len(known)),
        mean_credit=_rate(sum(r.credit for r in reports), n),
        outcome_known=len(known),
        table=PcrOutcomeTable(counts),
    )


def _rate(part: float, whole: int) -> float:
    return part / whole if whole else math.nan


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)
