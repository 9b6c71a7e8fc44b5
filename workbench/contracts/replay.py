"""Replay recorded trajectories through the runtime: one ``ReplayReport`` per trajectory.

In a replay the recorded actions already happened, so a rejected action is still followed
by what the agent did next; the report counts it and the runtime carries on from the
unchanged state, exactly as a live guard that refused the action would. ``feedback=False``
replays as if feedback had been withheld (the factorial study's no-feedback arms): the same
verdicts, but no step counts as a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from workbench.contracts.contract import Contract
from workbench.contracts.results import StepResult, TerminationVerdict
from workbench.contracts.runtime import ContractRuntime
from workbench.contracts.trajectories import Trajectory

Scorer = Callable[[Trajectory], float | bool | None]


@dataclass(frozen=True)
class ReplayReport:
    """The runtime's verdict on one trajectory."""

    trajectory_id: str
    steps: tuple[StepResult, ...]
    termination: TerminationVerdict
    rejected: int
    agent_steps: int
    milestones: dict[str, tuple[str | None, ...]]
    credit: float
    outcome: float | None
    hints: int = 0  # rejected agent steps on which feedback was shown

    @property
    def accepted_termination(self) -> bool:
        return self.termination.accepted

    @property
    def rejection_feedback_free(self) -> bool:
        """Accepted termination with no rejected-action feedback shown to the agent (counts
        towards RF-PCR, the contracts paper's definition). With feedback withheld every accepted
        termination counts; with feedback shown it is the same as ``rejection_free``
        (only the steps after a halt are rejected without feedback, and a halted run never
        terminates acceptably)."""
        return self.termination.accepted and self.hints == 0

    @property
    def rejection_free(self) -> bool:
        """Accepted termination with not a single rejected action, shown or not (counts
        towards the no-rejection PCR)."""
        return self.termination.accepted and self.rejected == 0

    def to_dict(self, *, steps: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.trajectory_id,
            "accepted_termination": self.accepted_termination,
            "rejected": self.rejected,
            "milestones": sorted(self.milestones),
            "credit": round(self.credit, 6),
            "outcome": self.outcome,
            "agent_steps": self.agent_steps,
            "hints": self.hints,
            "final_phase": self.termination.phase,
            "termination_reason": self.termination.reason,
        }
        if steps:
            out["steps"] = [s.to_dict() for s in self.steps]
        return out


def replay(contract: Contract, trajectory: Trajectory, *, rho: float | None = None,
           scorer: Scorer | None = None, feedback: bool = True) -> ReplayReport:
    """Run every step of ``trajectory`` through a fresh runtime and judge termination.

    The outcome is ``scorer(trajectory)`` when a scorer is given, else the trajectory's own.
    ``feedback`` is the runtime's switch (see :class:`ContractRuntime`).
    """
    runtime = ContractRuntime(contract, rho=rho, feedback=feedback)
    for step in trajectory.steps:
        runtime.step(step.action, step.observation)
    outcome = trajectory.outcome
    if scorer is not None:
        scored = scorer(trajectory)
        outcome = None if scored is None else float(scored)
    state = runtime.state
    return ReplayReport(
        trajectory_id=trajectory.id,
        steps=tuple(runtime.history),
        termination=runtime.finish(),
        rejected=state.rejected,
        agent_steps=state.agent_steps,
        milestones=state.milestones,
        credit=state.credit,
        outcome=outcome,
        hints=state.hints,
    )


def replay_all(contract: Contract, trajectories: Iterable[Trajectory], *, rho: float | None = None,
               scorer: Scorer | None = None, feedback: bool = True) -> list[ReplayReport]:
    return [replay(contract, t, rho=rho, scorer=scorer, feedback=feedback) for t in trajectories]
