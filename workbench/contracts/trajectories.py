"""Recorded trajectories: tau-bench runs and plain OpenAI-style message lists, as actions.

Messages become steps as follows:

- ``system``/``developer`` messages are skipped (the policy, not an action);
- ``user`` text -> a user action;
- ``assistant`` text -> an assistant (message) action; each of its ``tool_calls`` -> a tool
  action, after the text, with ``parallel`` = the number of calls in that message and
  ``with_message`` = whether the message also had text;
- ``tool`` (or legacy ``function``) content -> the observation of the call it answers: the
  latest unanswered call with the same ``tool_call_id``, else with the same name, else the
  oldest unanswered call. (tau-bench reuses call ids, hence "latest unanswered".)

Accepted files (``load_trajectories``): a JSON list of tau-bench records
``{task_id, trial, reward, traj}``; a JSON list of ``{id?, messages, reward?}``; one message
list; a list of message lists; ``{"trajectories": [...]}``; or JSON Lines of any record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from workbench.contracts.actions import Action
from workbench.errors import WorkbenchError
from workbench.inputs import InputError, iter_jsonl, loads_json, read_input_text


class TrajectoryFormatError(WorkbenchError, ValueError):
    """The trajectory file or data is not in a supported shape; the message says where."""


@dataclass(frozen=True)
class TrajectoryStep:
    action: Action
    observation: str | None = None


@dataclass(frozen=True)
class Trajectory:
    """An identified sequence of steps with the run's own outcome (e.g. tau-bench reward)."""

    id: str
    steps: tuple[TrajectoryStep, ...]
    outcome: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def agent_steps(self) -> int:
        return sum(1 for s in self.steps if s.action.by_agent)


def steps_from_messages(messages: Sequence[Any], where: str = "messages") -> tuple[TrajectoryStep, ...]:
    """Map OpenAI-style chat messages to steps (see the module docstring)."""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise TrajectoryFormatError(f"{where}: expected a list of messages")
    steps: list[list[Any]] = []  # [action, observation]
    unanswered: list[int] = []  # indexes into steps of tool calls without a result
    for i, message in enumerate(messages):
        here = f"{where}[{i}]"
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise TrajectoryFormatError(f"{here}: expected a message object with a 'role'")
        role = message["role"]
        if role in ("system", "developer"):
            continue
        if role == "user":
            steps.append([Action.user(_text(message.get("content"))), None])
        elif role == "assistant":
            text = _text(message.get("content"))
            raw_calls = message.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise TrajectoryFormatError(f"{here}.tool_calls: expected a list of tool calls")
            calls = list(raw_calls)
            if message.get("function_call"):
                calls.append({"function": message["function_call"]})
            if text.strip() or not calls:
                steps.append([Action.assistant(text), None])
            for j, call in enumerate(calls):
                action = _tool_action(call, len(calls), bool(text.strip()), f"{here}.tool_calls[{j}]")
                unanswered.append(len(steps))
                steps.append([action, None])
        elif role in ("tool", "function"):
            target = _answered_call(steps, unanswered, message)
            if target is not None:
                unanswered.remove(target)
                steps[target][1] = _text(message.get("content"), keep_json=True)
        else:
            raise TrajectoryFormatError(
                f"{here}: unknown role {role!r}; expected system, user, assistant or tool"
            )
    return tuple(TrajectoryStep(a, o) for a, o in steps)


def _tool_action(call: Any, parallel: int, with_message: bool, where: str) -> Action:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise TrajectoryFormatError(f"{where}: expected {{function: {{name, arguments}}}}")
    raw = function.get("arguments")
    if isinstance(raw, Mapping):
        args: dict[str, Any] = dict(raw)
    elif raw in (None, ""):
        args = {}
    else:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else None
        except (ValueError, RecursionError):  # bad JSON, >4300-digit ints, absurd nesting
            parsed = None
        # Model output is untrusted: unparseable arguments are kept for display only, so any
        # argument check on this call fails rather than guessing.
        args = dict(parsed) if isinstance(parsed, Mapping) else {"_raw_arguments": str(raw)}
    return Action.tool(function["name"], args, call_id=call.get("id"), parallel=parallel,
                       with_message=with_message)


def _answered_call(steps: list[list[Any]], unanswered: list[int], message: Mapping[str, Any]) -> int | None:
    if not unanswered:
        return None
    call_id, name = message.get("tool_call_id"), message.get("name")
    by_id = (i for i in reversed(unanswered) if call_id is not None and steps[i][0].call_id == call_id)
    by_name = (i for i in reversed(unanswered) if name is not None and steps[i][0].name == name)
    return next(chain(by_id, by_name), unanswered[0])


def _text(content: Any, *, keep_json: bool = False) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and not keep_json:
        parts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "\n".join(p for p in parts if p)
    return json.dumps(content, ensure_ascii=False, default=str)


def _outcome(record: Mapping[str, Any], where: str) -> float | None:
    for key in ("reward", "outcome"):
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool | int | float):
            return float(value)
        raise TrajectoryFormatError(f"{where}.{key}: expected a number, got {value!r}")
    return None


def from_record(record: Any, index: int, source: str = "trajectories") -> Trajectory:
    """One trajectory from a tau-bench record, a ``{messages}`` record or a message list."""
    where = f"{source}[{index}]"
    if isinstance(record, list):
        return Trajectory(f"{index}", steps_from_messages(record, where))
    if not isinstance(record, Mapping):
        raise TrajectoryFormatError(f"{where}: expected a trajectory object or message list")
    if "traj" in record:  # tau-bench
        task, trial = record.get("task_id"), record.get("trial")
        tid = record.get("id") or (f"task{task}-trial{trial}" if task is not None else f"{index}")
        meta = {k: record[k] for k in ("task_id", "trial") if k in record}
        return Trajectory(str(tid), steps_from_messages(record["traj"], f"{where}.traj"),
                          _outcome(record, where), meta)
    if "messages" in record:
        tid = record.get("id", index)
        return Trajectory(str(tid), steps_from_messages(record["messages"], f"{where}.messages"),
                          _outcome(record, where))
    raise TrajectoryFormatError(f"{where}: expected 'traj' (tau-bench) or 'messages'")


def parse_trajectories(data: Any, source: str = "trajectories") -> list[Trajectory]:
    """Trajectories from already-parsed JSON (see the module docstring for the shapes)."""
    if isinstance(data, Mapping):
        if "trajectories" in data:
            return parse_trajectories(data["trajectories"], source)
        return [from_record(data, 0, source)]
    if not isinstance(data, list):
        raise TrajectoryFormatError(f"{source}: expected a JSON list or object")
    if data and all(isinstance(m, Mapping) and "role" in m for m in data):
        return [Trajectory(source.rsplit(".", 1)[0] or "0", steps_from_messages(data, source))]
    out = [from_record(record, i, source) for i, record in enumerate(data)]
    seen: set[str] = set()
    for t in out:
        if t.id in seen:
            raise TrajectoryFormatError(f"{source}: trajectory id {t.id!r} appears twice")
        seen.add(t.id)
    return out


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Read a ``.json`` or ``.jsonl`` trajectory file; raises ``TrajectoryFormatError``."""
    path = Path(path)
    try:
        text = read_input_text(path, "trajectory file")
    except InputError as exc:
        raise TrajectoryFormatError(f"cannot read {exc}") from None
    return read_trajectories(text, path.name, where=str(path))


def read_trajectories(text: str, name: str, *, where: str | None = None) -> list[Trajectory]:
    """Trajectories from the text of a file called ``name`` (``.jsonl``: JSON Lines)."""
    where = where or name
    try:
        if name.endswith(".jsonl"):
            return parse_trajectories([value for _, value in iter_jsonl(text, where)], name)
        data = loads_json(text, where)
    except InputError as exc:
        raise TrajectoryFormatError(f"{exc}; expected a trajectory file") from None
    return parse_trajectories(data, name)
