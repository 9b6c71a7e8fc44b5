"""Contracts at run time: "given this trajectory so far, may I call X now, and what is
missing?" — asked by an agent runtime before each tool call.

    check = check_call(contract, messages_so_far, Action.tool("cancel_reservation", {...}))
    if not check.allowed:
        tell_the_agent(check.feedback)      # the contracts paper's feedback: why, where, what next
        log.record(check, actor=actor)      # kept like an audit trace

The answer comes from :class:`ContractRuntime`: the trajectory so far is replayed through a
fresh runtime (as ``contract replay`` does, recorded observations included), then the call
is checked without being applied (``ContractRuntime.check``), so each answer is the decision
``contract replay`` makes on that step. ``missing_phases`` are the required phases not yet
done (what termination would still need); ``next_action`` one admissible action from here.

A blocked call and its feedback are appended to a :class:`ContractCheckLog` (JSON Lines, one
record per blocked call, with who recorded it); the Contracts page lists them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.clock import utcnow
from workbench.contracts.actions import Action
from workbench.contracts.contract import Contract
from workbench.contracts.runtime import ContractRuntime
from workbench.contracts.trajectories import TrajectoryStep, steps_from_messages
from workbench.identity.roles import Actor, require

# Where blocked calls are kept unless told otherwise (the API and the Contracts page agree).
CHECK_LOG_ENV = "WORKBENCH_CONTRACT_LOG"
DEFAULT_CHECK_LOG = Path(".workbench") / "contract_checks.jsonl"
RECORD_ACTION = "store audit results"  # the role table's word for keeping an audit result


@dataclass(frozen=True)
class CallCheck:
    """The contract's answer for one proposed call."""

    contract: str
    call: Action
    allowed: bool
    phase: str
    reason: str  # why it is blocked ("" when allowed)
    next_action: str | None  # one admissible action from the current phase
    missing_phases: tuple[str, ...]  # required phases not done yet
    feedback: str  # the text the agent is shown (Feedback.render())
    steps_seen: int  # steps of the trajectory so far
    session: str = ""
    checked_at: str = field(default_factory=lambda: utcnow().isoformat())

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract, "call": self.call.to_dict(), "allowed": self.allowed,
            "phase": self.phase, "reason": self.reason, "next_action": self.next_action,
            "missing_phases": list(self.missing_phases), "feedback": self.feedback,
            "steps_seen": self.steps_seen, "session": self.session, "checked_at": self.checked_at,
        }


def check_call(contract: Contract, trajectory: Sequence[Mapping[str, Any]] | Sequence[TrajectoryStep],
               call: Action, *, rho: float | None = None, feedback: bool = True,
               session: str = "") -> CallCheck:
    """May ``call`` be made after ``trajectory`` (OpenAI-style chat messages, or steps)?
    Raises ``TrajectoryFormatError`` naming the message at fault, ``ValueError`` for a call
    that is not an agent action."""
    if not call.by_agent:
        raise ValueError("only an agent action (a tool call or a message) is checked")
    steps = (tuple(trajectory) if all(isinstance(s, TrajectoryStep) for s in trajectory)
             else steps_from_messages(trajectory, "trajectory"))
    runtime = ContractRuntime(contract, rho=rho, feedback=feedback)
    for step in steps:
        runtime.step(step.action, step.observation)
    answer = runtime.check(call)
    return CallCheck(
        contract=contract.name, call=call, allowed=answer.admissible, phase=answer.phase,
        reason=answer.reason, next_action=answer.next_action,
        missing_phases=runtime.finish().missing_phases, feedback=answer.render(),
        steps_seen=len(steps), session=session,
    )


class ContractCheckLog:
    """Blocked calls, one JSON line each, appended as ``actor`` (who may store audit
    results). Safe across the threads of one process; appends are single writes."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path or os.environ.get(CHECK_LOG_ENV) or DEFAULT_CHECK_LOG)
        self._lock = threading.Lock()

    def record(self, check: CallCheck, *, actor: Actor) -> None:
        """Append ``check`` with the acting identity; ``roles.NotAllowed`` when it may not."""
        require(actor, RECORD_ACTION)
        line = json.dumps({**check.to_dict(), "actor": actor.name}, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line)

    def read(self, limit: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        """The recorded checks, newest first (at most ``limit``), and the problems met
        (``file:line: ...``) on lines that are not a record; nothing when there is no file."""
        from workbench.inputs import InputError, iter_jsonl, read_input_text

        if not self.path.exists():
            return [], []
        try:
            text = read_input_text(self.path, "contract check log")
        except InputError as exc:
            return [], [str(exc)]
        rows, problems = [], []
        try:
            for line, value in iter_jsonl(text, str(self.path)):
                if isinstance(value, dict) and "contract" in value and "feedback" in value:
                    rows.append(value)
                else:
                    problems.append(f"{self.path}:{line}: not a contract check record")
        except InputError as exc:
            problems.append(str(exc))
        rows.reverse()
        return (rows[:limit] if limit is not None else rows), problems
