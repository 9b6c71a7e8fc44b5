"""What the runtime returns: feedback for one action, the result of a step, the termination
verdict and a snapshot of the state. Plain immutable values, safe to store and serialize."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from workbench.contracts.actions import Action


@dataclass(frozen=True)
class Feedback:
    """Contract-state feedback for one action: admissible or not, where, what next."""

    admissible: bool
    phase: str
    next_action: str | None
    reason: str = ""

    def render(self) -> str:
        """One paragraph an agent can read."""
        head = "Accepted." if self.admissible else f"Rejected: {self.reason}."
        tail = f" Admissible next action: {self.next_action}." if self.next_action else ""
        return f"{head} Current phase: {self.phase}.{tail}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StepResult:
    """What the runtime decided for one action (and, once observed, what it verified)."""

    index: int
    action: Action
    accepted: bool
    phase_before: str
    phase: str
    via: str
    feedback: Feedback
    observation: str | None = None
    milestones: tuple[str, ...] = ()
    credit: float = 0.0
    recovery: bool = False
    halted: str | None = None
    feedback_shown: bool = False

    def agent_message(self) -> str | None:
        """What a live guard tells the agent: ``None`` for an accepted action (execute it);
        for a rejected one the feedback when it is shown, else only that the action was not
        executed (feedback withheld)."""
        if self.accepted:
            return None
        return self.feedback.render() if self.feedback_shown else "The action was not executed."

    def to_dict(self, *, observation_chars: int | None = 400) -> dict[str, Any]:
        obs = self.observation
        if obs is not None and observation_chars is not None and len(obs) > observation_chars:
            obs = obs[:observation_chars] + "…"
        return {
            "index": self.index, "action": self.action.to_dict(), "accepted": self.accepted,
            "phase_before": self.phase_before, "phase": self.phase, "via": self.via,
            "feedback": self.feedback.to_dict(), "observation": obs,
            "milestones": list(self.milestones), "credit": round(self.credit, 6),
            "recovery": self.recovery, "halted": self.halted,
            "feedback_shown": self.feedback_shown,
        }


@dataclass(frozen=True)
class TerminationVerdict:
    accepted: bool
    phase: str
    missing_phases: tuple[str, ...] = ()
    budget_exhausted: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class ContractState:
    """A snapshot of the runtime state (for display and for tests)."""

    phase: str
    milestones: dict[str, tuple[str | None, ...]]
    done_phases: tuple[str, ...]
    recovering: bool
    turns: int
    tool_calls: int
    halted: str | None
    rejected: int
    agent_steps: int
    credit: float
    hints: int = 0  # rejected agent steps on which feedback was shown
