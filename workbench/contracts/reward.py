"""The runtime's verified progress credit as a training reward (the contracts paper's GRPO).

Per step, the reward is the credit the runtime verified on that step: the first completion
of each milestone earns its credit, times rho when the recovery action (the first accepted
agent action after rejection feedback was shown) completed it. A trajectory's return is

    R = outcome_weight * outcome + credit_weight * sum_t credit_t

with the outcome 0 when unknown, and the credit term only in the arms of the factorial
study that use credit. The four arms (:data:`CONDITIONS`) cross feedback (shown on
rejections, or withheld) with credit (in the return, or not):

    outcome_only    feedback withheld, R = outcome
    feedback_only   feedback shown,    R = outcome
    credit_only     feedback withheld, R = outcome + credit
    feedback_credit feedback shown,    R = outcome + credit

Feedback changes what the agent sees during a live rollout (``ContractRuntime(feedback=)``)
and, in the arms that withhold it, no action is a recovery: the credit is never discounted
(the contracts paper, A.1). Each arm is replayed with its switch. :func:`progress_reward` returns a
reward function with the ``(completions, **kwargs) -> list[float]`` signature TRL's GRPO
trainer calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.contracts.contract import Contract
from workbench.contracts.replay import ReplayReport, replay
from workbench.contracts.trajectories import Trajectory, TrajectoryFormatError, steps_from_messages


@dataclass(frozen=True)
class Condition:
    """One arm of the factorial study."""

    name: str
    feedback: bool
    credit: bool


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition("outcome_only", feedback=False, credit=False),
        Condition("feedback_only", feedback=True, credit=False),
        Condition("credit_only", feedback=False, credit=True),
        Condition("feedback_credit", feedback=True, credit=True),
    )
}


def condition(name: str) -> Condition:
    """The arm called ``name``; ``ValueError`` naming the arms for anything else."""
    try:
        return CONDITIONS[name]
    except KeyError:
        raise ValueError(f"unknown condition {name!r}; choose one of {', '.join(CONDITIONS)}") from None


def step_rewards(report: ReplayReport) -> list[float]:
    """The credit verified on each step of ``report`` (rho applied), aligned with its steps;
    user turns and rejected steps earn 0."""
    return [step.credit for step in report.steps]


def trajectory_return(report: ReplayReport, *, use_credit: bool = True,
                      outcome_weight: float = 1.0, credit_weight: float = 1.0) -> float:
    """``outcome_weight * outcome + credit_weight * sum(step_rewards)`` (the credit term
    only with ``use_credit``); an unknown outcome counts 0."""
    outcome = report.outcome if report.outcome is not None else 0.0
    credit = sum(step_rewards(report)) if use_credit else 0.0
    return outcome_weight * outcome + credit_weight * credit


def progress_reward(contract: Contract, *, arm: str = "feedback_credit", rho: float | None = None,
                    outcome_weight: float = 1.0, credit_weight: float = 1.0,
                    ) -> Callable[..., list[float]]:
    """A reward function for trainers: ``reward(completions, prompts=None, outcome=None,
    **kwargs) -> list[float]``, one return per completion.

    A completion is a :class:`Trajectory`, a list of chat messages, or a mapping with
    ``messages``; a conversational prompt (a message list) is prepended, so the contract
    sees the user's turns. ``outcome`` (a dataset column: one number or None per
    completion) overrides a trajectory's own outcome. Raises ``ValueError`` for an unknown
    arm or rho outside (0, 1], ``TrajectoryFormatError`` for a completion of another shape.
    """
    chosen = condition(arm)
    if rho is not None and not 0 < rho <= 1:
        raise ValueError(f"rho must be in (0, 1], got {rho}")

    def reward(completions: Sequence[Any], prompts: Sequence[Any] | None = None,
               outcome: Sequence[float | None] | None = None, **_: Any) -> list[float]:
        returns = []
        for i, completion in enumerate(completions):
            prompt = prompts[i] if prompts is not None else None
            trajectory = _trajectory(completion, prompt, i)
            if outcome is not None:
                value = outcome[i]
                trajectory = Trajectory(trajectory.id, trajectory.steps,
                                        None if value is None else float(value), trajectory.meta)
            report = replay(contract, trajectory, rho=rho, feedback=chosen.feedback)
            returns.append(trajectory_return(report, use_credit=chosen.credit,
                                             outcome_weight=outcome_weight,
                                             credit_weight=credit_weight))
        return returns

    reward.__name__ = f"contract_{chosen.name}"  # trainers log rewards under this name
    return reward


def _trajectory(completion: Any, prompt: Any, index: int) -> Trajectory:
    if isinstance(completion, Trajectory):
        return completion
    where = f"completions[{index}]"
    messages = completion.get("messages") if isinstance(completion, Mapping) else completion
    if not isinstance(messages, list):
        raise TrajectoryFormatError(
            f"{where}: expected a Trajectory, a list of chat messages or {{'messages': [...]}}; "
            "plain-text completions carry no actions for the contract to check"
        )
    before = prompt if isinstance(prompt, list) else []
    return Trajectory(str(index), steps_from_messages([*before, *messages], where))
