"""OpenAI Chat Completions message lists: JSONL, one conversation a line.

    {"id": "conv-7", "messages": [
       {"role": "system", "content": "You are ..."},
       {"role": "user", "content": "Cancel my booking ZFA04Y"},
       {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
          "type": "function", "function": {"name": "get_reservation_details",
                                           "arguments": "{\\"reservation_id\\": \\"ZFA04Y\\"}"}}]},
       {"role": "tool", "tool_call_id": "call_1", "content": "{...}"},
       {"role": "assistant", "content": "Your booking is cancelled."}]}

The shape most agent frameworks log and OpenAI's fine-tuning and evaluation files use. Each
assistant message becomes a case (tool-calling ones too: calling ``cancel_reservation`` is
what a policy may forbid). Read besides ``messages``, all optional: ``id`` (else the file
name and line), ``session``, ``label`` (the last reply's gold label; a message's own
``label`` wins), ``skills`` or ``policy`` (also ``metadata.policy``). Content may be a
string, null, or a list of content parts; ``tool_calls``, the legacy ``function_call`` and
``refusal`` are kept; ``tool`` and legacy ``function`` messages are results.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
    label_of,
    origin_stem,
    text_of,
    tool_call_text,
    tool_result_text,
)
from workbench.inputs import InputError, iter_jsonl

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
FIX_MESSAGES = 'each line needs "messages": a list of {"role", "content"} objects (OpenAI chat format)'


def chat_messages(raw: Any, where: str) -> list[Message]:
    """OpenAI chat messages as :class:`Message` s (tool results named after their call)."""
    if not isinstance(raw, list):
        raise fail(where, "'messages' must be a list", FIX_MESSAGES)
    names: dict[str, str] = {}  # tool_call_id -> tool name, to name each result
    out = []
    for _, at, m in json_objects(raw, where, "a message", FIX_MESSAGES):
        role = m.get("role")
        if role not in ROLES:
            raise fail(at, f"role {role!r} is not a chat role",
                       f"use one of {', '.join(ROLES)}")
        text = text_of(m.get("content"), at)
        if role == "assistant":
            calls = _tool_calls(m, at, names)
            refusal = m.get("refusal") if isinstance(m.get("refusal"), str) else ""
            text = joined(text, refusal, *calls)
        elif role == "tool":
            call_id = m.get("tool_call_id")
            text = tool_result_text(names.get(call_id) if isinstance(call_id, str) else None, text)
        elif role == "function":
            role, text = "tool", tool_result_text(m.get("name") if isinstance(m.get("name"), str)
                                                  else None, text)
        out.append(Message(role, text, label_of(m.get("label"), f"{at}.label")))
    return out


def _tool_calls(m: dict[str, Any], at: str, names: dict[str, str]) -> list[str]:
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise fail(at, "'tool_calls' must be a list", 'write [{"id", "type": "function", '
                   '"function": {"name", "arguments"}}]')
    lines = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise fail(f"{at}.tool_calls[{j}]", "a tool call needs function.name",
                       'write {"id": "call_1", "type": "function", "function": {"name": "...", '
                       '"arguments": "{...}"}}')
        if isinstance(call.get("id"), str):
            names[call["id"]] = fn["name"]
        lines.append(tool_call_text(fn["name"], fn.get("arguments")))
    legacy = m.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        lines.append(tool_call_text(legacy["name"], legacy.get("arguments")))
    return lines


def _conversation_id(record: dict[str, Any], origin: str, number: int) -> str:
    cid = record.get("id")
    if isinstance(cid, int) and not isinstance(cid, bool):
        cid = str(cid)
    return cid if isinstance(cid, str) and cid.strip() else f"{origin_stem(origin)}-l{number}"


def policy_named(record: dict[str, Any]) -> str | list[str] | None:
    """What a record names: ``skills`` (SKILL names, as in the case schema: a list) or a
    policy name to resolve (``policy``, ``metadata.policy``: a string)."""
    skills = record.get("skills")
    if isinstance(skills, str) and skills.strip():
        return [skills.strip()]
    if isinstance(skills, list) and skills and all(isinstance(s, str) and s for s in skills):
        return list(skills)
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    for value in (record.get("policy"), meta.get("policy")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def skills_for(named: str | list[str] | None, policies: PolicyNames, notes: Notes) -> list[str] | None:
    if isinstance(named, list):  # the record names SKILLs itself
        return list(policies.skills) or [policies.mapping.get(n, n) for n in named]
    return policies.resolve(named, notes)


def read_openai(text: str | Iterable[str], origin: str, policies: PolicyNames, notes: Notes,
                history: HistoryBound | None = None) -> Iterator[AuditCase]:
    """Cases of a chat log, a conversation (line) at a time: ``text`` is the whole text or
    its lines as they are read, so memory follows the longest conversation, not the file."""
    try:
        for number, record in iter_jsonl(text, origin):
            where = f"{origin}:{number}"
            if not isinstance(record, dict) or "messages" not in record:
                raise fail(where, "not a chat conversation", FIX_MESSAGES)
            messages = chat_messages(record["messages"], f"{where}: messages")
            cid = _conversation_id(record, origin, number)
            session = record.get("session")
            made = 0
            for case in cases_from(
                messages, cid, session=str(session) if isinstance(session, str | int) else "",
                skills=skills_for(policy_named(record), policies, notes),
                label=label_of(record.get("label"), f"{where}: label"),
                extra={"source": {"format": "openai", "line": number}}, history=history,
                where=f"{where}: messages",
            ):
                made += 1
                yield case
            if not made:
                notes.add(f"{where}: no assistant reply to audit; skipped")
    except InputError as exc:
        raise input_failed(exc) from None
