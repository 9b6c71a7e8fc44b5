"""tau2-bench results files: the simulations of a run, each with its messages.

The shape is tau2-bench's results data model (``tau2.data_model.simulation.Results``)::

    {"timestamp": "...", "info": {"environment_info": {"domain_name": "airline", "policy": "..."},
                                  "agent_info": {...}, "user_info": {...}, ...},
     "tasks": [{"id": "3", "description": {...}, "user_scenario": {...}, ...}],
     "simulations": [{"id": "...", "task_id": "3", "trial": 0, "termination_reason": "user_stop",
                      "reward_info": {"reward": 0.0, ...},
                      "messages": [{"role": "assistant", "content": "Hi! How can I help you?"},
                                   {"role": "user", "content": "..."},
                                   {"role": "assistant", "content": null, "tool_calls":
                                      [{"id": "c1", "name": "cancel_reservation",
                                        "arguments": {"reservation_id": "ZFA04Y"},
                                        "requestor": "assistant"}]},
                                   {"role": "tool", "id": "c1", "content": "{...}",
                                    "requestor": "assistant", "error": false}, ...]}]}

A single simulation object, or a JSON list of them, is read too. Every assistant message of
every simulation becomes a case, its id ``<simulation id>:<message position>``, its session
the simulation; the domain (``info.environment_info.domain_name``) is the policy the cases
name (``--policy airline=airline-policy`` maps it to a SKILL). The task id, trial, reward and
termination reason are kept in ``extra["tau2"]``: a reward is about the whole task, not one
reply, so it is not a gold label. Tool calls of the simulated user (``requestor: "user"``,
the telecom domain) are kept as the user's turns. Simulations stored only as voice ticks
(no ``messages``) are skipped and reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.importers.common import (
    HistoryBound,
    Message,
    Notes,
    PolicyNames,
    cases_from,
    fail,
    input_failed,
    joined,
    json_objects,
    tool_call_text,
    tool_result_text,
)
from workbench.inputs import InputError, loads_json

ROLES = ("system", "user", "assistant", "tool")
FIX_FILE = ("pass a tau2-bench results file (the JSON `tau2 run` saves, with 'simulations'), "
            "one simulation, or a list of simulations")


def read_tau2(text: str, origin: str, policies: PolicyNames, notes: Notes,
              history: HistoryBound | None = None) -> Iterator[AuditCase]:
    """Cases of a results file, a simulation at a time (the file is one JSON document, read
    whole: memory follows the file, not the square of its conversations)."""
    data = _loads(text, origin)
    text = ""  # the parsed document is what is used from here
    domain = None
    if isinstance(data, dict) and "simulations" in data:
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
        domain = env.get("domain_name") if isinstance(env.get("domain_name"), str) else None
        sims = data["simulations"]
        where = f"{origin}: simulations"
    elif isinstance(data, dict) and ("messages" in data or "ticks" in data):
        sims, where = [data], f"{origin}: simulation"
    elif isinstance(data, list):
        sims, where = data, origin
    else:
        raise fail(origin, "not a tau2-bench results file", FIX_FILE)
    if not isinstance(sims, list):
        raise fail(where, "must be a list of simulations", FIX_FILE)
    skills = policies.resolve(domain, notes)
    for k, at, sim in json_objects(sims, where, "a simulation", FIX_FILE):
        sim_id = sim.get("id")
        if not isinstance(sim_id, str) or not sim_id.strip():
            raise fail(at, "the simulation has no 'id'", "every tau2 simulation has a string id")
        at = f"{at} (id {sim_id!r})"
        raw = sim.get("messages")
        if raw is None:
            notes.add(f"{at}: no 'messages' (a voice run stored as ticks); skipped")
            continue
        made = 0
        for case in cases_from(_messages(raw, f"{at}.messages"), sim_id, skills=skills,
                               extra={"tau2": _run_facts(sim, domain),
                                      "source": {"format": "tau2", "simulation": k}},
                               history=history, where=f"{at}.messages"):
            made += 1
            yield case
        if not made:
            notes.add(f"{at}: no assistant message to audit; skipped")


def _loads(text: str, origin: str) -> Any:
    try:
        return loads_json(text, origin)
    except InputError as exc:
        fix = None
        if "Extra data" in exc.problem:  # JSON lines, not one results document
            fix = ("a tau2-bench results file is one JSON document and this file holds several "
                   "(JSON lines?); if it is chat logs or spans, use --format openai, otel or map")
        raise input_failed(exc, fix) from None


def _run_facts(sim: dict[str, Any], domain: str | None) -> dict[str, Any]:
    reward = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
    facts = {"simulation_id": sim["id"], "task_id": sim.get("task_id"), "trial": sim.get("trial"),
             "domain": domain, "termination_reason": sim.get("termination_reason"),
             "reward": reward.get("reward")}
    return {k: v for k, v in facts.items() if v is not None}


def _messages(raw: Any, where: str) -> list[Message]:
    if not isinstance(raw, list):
        raise fail(where, "must be a list of messages", FIX_FILE)
    names: dict[str, str] = {}
    out: list[Message] = []
    for _, at, m in json_objects(raw, where, "a message", FIX_FILE):
        role = m.get("role")
        if role not in ROLES:
            raise fail(at, f"role {role!r} is not a tau2 message role", f"use one of {', '.join(ROLES)}")
        if role == "tool":
            parts = m.get("tool_messages") if "tool_messages" in m else [m]  # MultiToolMessage
            if not isinstance(parts, list):
                raise fail(at, "'tool_messages' must be a list", FIX_FILE)
            out += [_tool_result(p, f"{at}.tool_messages[{j}]" if p is not m else at, names)
                    for j, p in enumerate(parts)]
            continue
        content = _content(m, at)
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise fail(at, "'tool_calls' must be a list", 'write [{"id", "name", "arguments": {...}}]')
        lines = []
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                raise fail(f"{at}.tool_calls[{j}]", "a tool call needs a 'name'",
                           'write {"id": "...", "name": "...", "arguments": {...}}')
            if isinstance(call.get("id"), str) and call["id"]:
                names[call["id"]] = call["name"]
            lines.append(tool_call_text(call["name"], call.get("arguments")))
        out.append(Message(role, joined(content, *lines)))
    return out


def _content(m: dict[str, Any], at: str) -> str:
    content = m.get("content")
    if m.get("is_audio"):  # base64 audio: the gold script is the words, if the run kept it
        script = m.get("audio_script_gold")
        return script if isinstance(script, str) else "[audio message]"
    if content is not None and not isinstance(content, str):
        raise fail(at, "'content' must be a string or null", "tau2 messages hold text content")
    return content or ""


def _tool_result(m: Any, at: str, names: dict[str, str]) -> Message:
    if not isinstance(m, dict):
        raise fail(at, "a tool message must be a JSON object", FIX_FILE)
    content = m.get("content")
    if content is not None and not isinstance(content, str):
        raise fail(at, "'content' must be a string or null", "tau2 tool messages hold text")
    call_id = m.get("id")
    name = names.get(call_id) if isinstance(call_id, str) else None
    text = tool_result_text(name, content or "", error=m.get("error") is True)
    if m.get("requestor") == "user":
        text = f"(to the user) {text}"
    return Message("tool", text)
