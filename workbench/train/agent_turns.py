"""GRPO on an agent's turns with the skill contract's progress reward, offline.

The contracts paper trains the agent by GRPO on ``R = outcome + verified progress credit``
(``workbench.contracts.reward``). Without the live environment, each recorded trajectory
gives one prompt per agent turn: the conversation up to that turn (the policy as the system
message, the user's turns, the agent's earlier calls and the tools' results as recorded).
The student writes the turn: one tool call as JSON ``{"name": ..., "arguments": {...}}``
(also inside ``<tool_call>`` tags or a ```json fence), or a message to the user. Its reward
is what the turn adds to the contract's return,
``progress_reward(prefix + turn) - progress_reward(prefix)``: the credit of the milestones
the runtime verifies on the turn, times rho when the turn is the recovery action after shown
feedback, and 0 when the contract rejects it. The constant prefix part cancels in GRPO's
group-normalised advantages anyway; subtracting it keeps the logged reward readable.

Offline, a tool call can only be observed when it is the call recorded at this turn (same
tool, same arguments): then the recorded result is its observation, and milestones verified
by an observation count. Any other call gets no result, so it earns no observation-verified
milestone; a message needs none. The prompt is the recorded conversation: where the contract
would have rejected a recorded action, the recorded run saw no feedback, so none is added.
The task outcome belongs to a whole run, not to one turn: the outcome-only arms would give
every turn 0 and are refused.

Two ways to score a completion (``ADVANTAGES``):

- ``trajectory`` (the contracts paper's definition, the default): GRPO's advantage is one
  number per trajectory, given to every token of it, from the trajectory's return
  ``R = outcome + Σ credit``. Offline, the trajectory of a completion is the recorded one
  with the completion in place of the recorded turn: the recorded prefix, the completion,
  then the recorded rest of the run, replayed whole. So a completion that earns a milestone
  early takes it from a later recorded turn, and one the contract rejects leaves the rest
  of the run to be judged after a rejection; the recorded outcome (tau-bench ``reward``) is
  the same for the whole group and cancels in the normalised advantage.
- ``turn`` (ours, the earlier behaviour): the credit the completion adds to its prefix alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.contracts.contract import Contract
from workbench.contracts.reward import condition, progress_reward
from workbench.contracts.trajectories import TrajectoryFormatError, read_trajectories
from workbench.inputs import InputError, iter_jsonl, loads_json, read_input_text

Messages = list[dict[str, Any]]
RewardFn = Callable[[int, str], float]

ANSWER_FORMAT = (
    "Answer with exactly one of: one tool call, written as a JSON object "
    '{{"name": TOOL, "arguments": {{...}}}} (tools: {tools}); or a plain message to the user. '
    "Never both in one turn."
)
GENERATED_CALL_ID = "generated-turn"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_TOOL_TAG = re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.DOTALL)


@dataclass(frozen=True)
class AgentTurn:
    """One agent turn of a recorded trajectory, as a GRPO prompt."""

    trajectory_id: str
    position: int  # index of the agent's message in the trajectory's messages
    prompt: Messages  # what the student reads: role/content messages, answer format added
    prefix: Messages  # the recorded messages before the turn (what the contract replays)
    recorded: Messages  # the recorded agent message and the tool results answering it
    after: Messages = field(default_factory=list)  # the recorded rest of the run
    outcome: float | None = None  # the recorded run's outcome (tau-bench reward), if known


def load_agent_turns(path: str | Path, contract: Contract, *,
                     turns_per_trajectory: int | None = None) -> list[AgentTurn]:
    """The agent turns of a trajectory file (the shapes ``load_trajectories`` reads);
    raises ``TrajectoryFormatError`` naming the place."""
    path = Path(path)
    try:
        text = read_input_text(path, "trajectory file")
        data = ([v for _, v in iter_jsonl(text, str(path))] if path.name.endswith(".jsonl")
                else loads_json(text, str(path)))
    except InputError as exc:
        raise TrajectoryFormatError(f"cannot read {exc}") from None
    read = read_trajectories(text, path.name, where=str(path))  # validates
    return agent_turns(list(zip([t.id for t in read], _message_lists(data), strict=True)),
                       contract, turns_per_trajectory=turns_per_trajectory,
                       outcomes=[t.outcome for t in read])


def agent_turns(trajectories: Sequence[tuple[str, Messages]], contract: Contract, *,
                turns_per_trajectory: int | None = None,
                outcomes: Sequence[float | None] | None = None) -> list[AgentTurn]:
    """One prompt per agent message that follows a user message, the first
    ``turns_per_trajectory`` of each trajectory (all by default), in file order;
    ``outcomes`` (one per trajectory) are the recorded runs' outcomes."""
    fmt = ANSWER_FORMAT.format(tools=", ".join(contract.tools) or "those the policy names")
    out: list[AgentTurn] = []
    for n, (tid, messages) in enumerate(trajectories):
        outcome = outcomes[n] if outcomes is not None else None
        taken, seen_user = 0, False
        for i, message in enumerate(messages):
            seen_user = seen_user or message.get("role") == "user"
            if message.get("role") != "assistant" or not seen_user:
                continue
            if turns_per_trajectory is not None and taken >= turns_per_trajectory:
                break
            end = i + 1
            while end < len(messages) and messages[end].get("role") in ("tool", "function"):
                end += 1
            out.append(AgentTurn(tid, i, _render(messages[:i], fmt), list(messages[:i]),
                                 list(messages[i:end]), list(messages[end:]), outcome))
            taken += 1
    return out


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when the completion is one tool call in the answer format, else
    None (the completion is a message to the user). Model output is untrusted: only a JSON
    object with a string ``name`` and an object ``arguments`` (or none) is a call."""
    body = text.strip()
    for wrapper in (_FENCE, _TOOL_TAG):
        found = wrapper.match(body)
        if found:
            body = found.group(1).strip()
    if not body.startswith("{"):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    args = data.get("arguments", {})
    if isinstance(args, str):  # OpenAI's wire form: arguments as a JSON string
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            return None
    if not isinstance(args, dict):
        return None
    return data["name"], args


def turn_messages(turn: AgentTurn, text: str) -> Messages:
    """The completion as chat messages: a message to the user, or the tool call with the
    recorded result when it is the recorded call (see the module docstring)."""
    call = parse_tool_call(text)
    if call is None:
        return [{"role": "assistant", "content": text}]
    name, args = call
    out: Messages = [{"role": "assistant", "content": "", "tool_calls": [{
        "id": GENERATED_CALL_ID, "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}]
    if call == _recorded_call(turn):
        out += [{"role": "tool", "tool_call_id": GENERATED_CALL_ID, "name": name,
                 "content": m.get("content")} for m in turn.recorded[1:2]]
    return out


ADVANTAGES = ("trajectory", "turn")


def turn_reward(contract: Contract, turns: Sequence[AgentTurn], *,
                arm: str = "feedback_credit", rho: float | None = None,
                advantage: str = "trajectory") -> RewardFn:
    """``reward(turn_index, completion) -> float`` for ``train_grpo``: with ``advantage=
    "trajectory"`` the return of the recorded trajectory with the completion in place of its
    turn, with ``"turn"`` the progress reward the completion adds to its turn's prefix (see
    the module docstring). Raises ``ValueError`` for an unknown arm or advantage, an arm
    without credit, or rho outside (0, 1]."""
    if advantage not in ADVANTAGES:
        raise ValueError(f"unknown advantage {advantage!r}; choose one of {', '.join(ADVANTAGES)}")
    chosen = condition(arm)
    if not chosen.credit:
        raise ValueError(
            f"the {arm} arm rewards only the outcome of a whole task, which one generated turn "
            "does not have (every turn would earn 0); choose credit_only or feedback_credit")
    score = progress_reward(contract, arm=arm, rho=rho)
    base: dict[int, float] = {}

    def whole(i: int, text: str) -> float:
        turn = turns[i]
        run = turn_messages(turn, text) + turn.after
        return round(score([run], prompts=[turn.prefix], outcome=[turn.outcome])[0], 9)

    def reward(i: int, text: str) -> float:
        turn = turns[i]
        if i not in base:
            base[i] = score([[]], prompts=[turn.prefix], outcome=[None])[0]
        after = score([turn_messages(turn, text)], prompts=[turn.prefix], outcome=[None])[0]
        return round(after - base[i], 9)  # 1.9 - 0.9 is 0.9999999999999998

    return whole if advantage == "trajectory" else reward


def _recorded_call(turn: AgentTurn) -> tuple[str, dict[str, Any]] | None:
    calls = turn.recorded[0].get("tool_calls") or []
    if len(calls) != 1 or not isinstance(calls[0], Mapping):
        return None
    function = calls[0].get("function") or {}
    return parse_tool_call(json.dumps({"name": function.get("name"),
                                       "arguments": function.get("arguments") or {}}))


def _render(messages: Sequence[Mapping[str, Any]], answer_format: str) -> Messages:
    """Role/content messages any chat template renders; the agent's earlier calls in the
    answer format, so the student sees its own turns as it must write them."""
    out: Messages = []
    for m in messages:
        role, text = m.get("role"), _content(m.get("content"))
        if role in ("system", "developer"):
            out.append({"role": "system", "content": f"{text}\n\n{answer_format}"})
        elif role == "assistant":
            calls = [json.dumps({"name": (c.get("function") or {}).get("name"),
                                 "arguments": _arguments((c.get("function") or {}).get("arguments"))},
                                ensure_ascii=False)
                     for c in m.get("tool_calls") or [] if isinstance(c, Mapping)]
            out.append({"role": "assistant", "content": "\n".join([t for t in [text] if t] + calls)})
        elif role in ("tool", "function"):
            out.append({"role": "tool", "content": text})
        else:
            out.append({"role": str(role), "content": text})
    if not out or out[0]["role"] != "system":
        out.insert(0, {"role": "system", "content": answer_format})
    return out


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw if raw is not None else {}


def _content(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _message_lists(data: Any) -> list[Messages]:
    """The message list of every trajectory, in the order ``parse_trajectories`` reads them."""
    if isinstance(data, Mapping):
        if "trajectories" in data:
            return _message_lists(data["trajectories"])
        data = [data]
    if data and all(isinstance(m, Mapping) and "role" in m for m in data):
        return [list(data)]
    return [list(r) if isinstance(r, list) else list(r.get("traj") or r.get("messages") or [])
            for r in data]
