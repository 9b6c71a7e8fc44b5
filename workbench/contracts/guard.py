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

import hashlib
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
    results). Safe across the threads of one process; appends are single writes.

    Bounded: a record keeps the call's name and a digest of its arguments (SHA-256, size and
    the first ``ARGS_EXCERPT`` characters of their JSON), never the arguments themselves, and
    long texts are cut (``TEXT_LIMIT``), so a record stays a few KB whatever a client sent.
    The file rotates: past ``max_bytes`` it becomes ``<name>.1`` (the older ``.1`` becomes
    ``.2`` ...), and ``keep`` rotated files are kept; :meth:`read` reads them newest first."""

    MAX_BYTES = 8 * 1024 * 1024
    KEEP = 3
    ARGS_EXCERPT = 500
    TEXT_LIMIT = 4000

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 max_bytes: int = MAX_BYTES, keep: int = KEEP):
        self.path = Path(path or os.environ.get(CHECK_LOG_ENV) or DEFAULT_CHECK_LOG)
        self.max_bytes, self.keep = max_bytes, keep
        self._lock = threading.Lock()

    def record(self, check: CallCheck, *, actor: Actor) -> None:
        """Append ``check`` (bounded, see the class doc) with the acting identity;
        ``roles.NotAllowed`` when it may not."""
        require(actor, RECORD_ACTION)
        line = json.dumps({**bounded_record(check, self.ARGS_EXCERPT, self.TEXT_LIMIT),
                           "actor": actor.name[:200]}, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._rotate(len(line.encode("utf-8")))
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line)

    def files(self) -> list[Path]:
        """The log and its rotated files, newest first (those that exist)."""
        found = [self.path] + [self.path.with_name(f"{self.path.name}.{n}")
                               for n in range(1, self.keep + 1)]
        return [p for p in found if p.exists()]

    def _rotate(self, adding: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size + adding <= self.max_bytes:
            return
        for n in range(self.keep, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            newer = self.path if n == 1 else self.path.with_name(f"{self.path.name}.{n - 1}")
            if n == self.keep:
                older.unlink(missing_ok=True)
            if newer.exists():
                newer.replace(older)

    def read(self, limit: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        """The recorded checks, newest first (at most ``limit``; the rotated files after the
        current one), and the problems met (``file:line: ...``) on lines that are not a
        record; nothing when there is no file."""
        from workbench.inputs import InputError, iter_jsonl, read_input_text

        rows: list[dict[str, Any]] = []
        problems: list[str] = []
        for path in self.files():
            if limit is not None and len(rows) >= limit:
                break
            try:
                text = read_input_text(path, "contract check log")
            except InputError as exc:
                problems.append(str(exc))
                continue
            found = []
            try:
                for line, value in iter_jsonl(text, str(path)):
                    if isinstance(value, dict) and "contract" in value and "feedback" in value:
                        found.append(value)
                    else:
                        problems.append(f"{path}:{line}: not a contract check record")
            except InputError as exc:
                problems.append(str(exc))
            rows += reversed(found)
        return (rows[:limit] if limit is not None else rows), problems


def bounded_record(check: CallCheck, excerpt: int = ContractCheckLog.ARGS_EXCERPT,
                   limit: int = ContractCheckLog.TEXT_LIMIT) -> dict[str, Any]:
    """``check.to_dict()`` as the log keeps it: the call's arguments replaced by their
    digest (``sha256``, ``bytes``, ``excerpt`` of their JSON), every text cut to ``limit``."""
    data = check.to_dict()
    call = dict(data.get("call") or {})
    if "args" in call:
        raw = json.dumps(call.pop("args"), ensure_ascii=False, sort_keys=True, default=str)
        encoded = raw.encode("utf-8")
        call["args_digest"] = {"sha256": hashlib.sha256(encoded).hexdigest(),
                               "bytes": len(encoded), "excerpt": raw[:excerpt]}
    for key in ("name", "text"):
        if isinstance(call.get(key), str):
            call[key] = call[key][:200 if key == "name" else limit]
    data["call"] = call
    for key in ("contract", "phase", "reason", "feedback", "session", "next_action"):
        if isinstance(data.get(key), str):
            data[key] = data[key][:limit]
    return data
