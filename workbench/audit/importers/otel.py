"""OpenTelemetry GenAI spans exported as JSON: one case per chat span (the model call's
output is the reply, its input messages the history).

Files: OTLP/JSON (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``, one document
or the collector's file exporter's one per line), or spans as the OpenTelemetry SDK writes
them (``{"name", "context": {"trace_id", "span_id"}, "attributes": {...}, "events": [...]}``:
the console exporter's output, one after another, or a JSON list). Attribute values may be
OTLP ``AnyValue`` s (``{"stringValue": ...}``, ``arrayValue``, ``kvlistValue``) or plain JSON.

Messages, first found wins (the ``gen_ai.*`` semantic conventions and what exporters write):

1. ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (and ``gen_ai.system_instructions``):
   ``[{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
   "arguments"}, {"type": "tool_call_response", "id", "response"}]}]``, structured or as a
   JSON string;
2. indexed attributes as OpenLLMetry (Traceloop) writes them: ``gen_ai.prompt.<i>.role``,
   ``.content``, ``.tool_calls.<j>.name``/``.arguments``, ``.tool_call_id`` and
   ``gen_ai.completion.<i>.*``;
3. ``gen_ai.prompt`` / ``gen_ai.completion`` holding the messages as JSON (attributes, or
   the ``gen_ai.content.prompt``/``gen_ai.content.completion`` span events of semconv 1.27);
4. per-message span events (semconv 1.28-1.36): ``gen_ai.system.message``,
   ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` and
   ``gen_ai.choice``, their body fields (``content``, ``tool_calls``, ``id``, ``message``)
   as event attributes.

The first output message (choice 0) is the reply. Spans with no GenAI messages (agent,
tool, HTTP spans) are passed over; a chat span with input but no output is reported. The
case id is ``<trace id>-<span id>``; the session is ``gen_ai.conversation.id`` (or
``session.id``), else the trace; ``gen_ai.agent.name`` is the policy the case names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    text_of,
    tool_call_text,
    tool_result_text,
)
from workbench.audit.importers.openai_chat import chat_messages
from workbench.audit.importers.otel_values import attribute_map, documents
from workbench.inputs import InputError

FIX = ("export the spans as OTLP/JSON (resourceSpans) or as the OpenTelemetry SDK's span JSON, "
       "with the GenAI message attributes captured")
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
               "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}


@dataclass
class Span:
    trace_id: str
    span_id: str
    name: str
    where: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def read_otel(text: str, origin: str, policies: PolicyNames, notes: Notes,
              history: HistoryBound | None = None) -> Iterator[AuditCase]:
    try:
        spans = [s for line, doc in documents(text, origin) for s in _spans(doc, f"{origin}:{line}")]
    except InputError as exc:
        raise input_failed(exc) from None
    for span in spans:
        found = _conversation(span)
        if found is None:
            continue
        before, output = found
        if not output:
            notes.add(f"{span.where}: chat span {span.span_id} has input messages but no output; "
                      "skipped (capture the output messages too)")
            continue
        a = span.attributes
        session = a.get("gen_ai.conversation.id") or a.get("session.id") or span.trace_id
        agent = a.get("gen_ai.agent.name")
        facts = {k: a[k] for k in ("gen_ai.request.model", "gen_ai.response.model",
                                   "gen_ai.response.id", "gen_ai.operation.name") if k in a}
        # One reply per span: its output (the replies in its history are other spans' outputs),
        # under the span's own id.
        for c in cases_from(
            [*before, output[0]], f"{span.trace_id}-{span.span_id}", session=str(session),
            skills=policies.resolve(agent if isinstance(agent, str) else None, notes),
            extra={"otel": {"trace_id": span.trace_id, "span_id": span.span_id,
                            "span_name": span.name, **facts},
                   "source": {"format": "otel"}},
            history=history, last_only=True, where=span.where,
        ):
            c.id = f"{span.trace_id}-{span.span_id}"
            yield c


def _spans(doc: Any, where: str) -> list[Span]:
    if isinstance(doc, list):
        return [s for i, d in enumerate(doc) for s in _spans(d, f"{where}[{i}]")]
    if not isinstance(doc, dict):
        raise fail(where, "not an OpenTelemetry span export", FIX)
    if "resourceSpans" in doc:
        out = []
        for r, res in enumerate(_list(doc["resourceSpans"], f"{where}: resourceSpans")):
            at = f"{where}: resourceSpans[{r}]"
            for s, scope in enumerate(_list(_obj(res, at).get("scopeSpans", []), f"{at}.scopeSpans")):
                sat = f"{at}.scopeSpans[{s}]"
                for k, raw in enumerate(_list(_obj(scope, sat).get("spans", []), f"{sat}.spans")):
                    out.append(_otlp_span(raw, f"{sat}.spans[{k}]"))
        return out
    if "context" in doc or "spanId" in doc:
        return [_otlp_span(doc, where) if "spanId" in doc else _sdk_span(doc, where)]
    raise fail(where, "not an OpenTelemetry span export (no resourceSpans, no span)", FIX)


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise fail(where, "must be a list", FIX)
    return value


def _obj(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise fail(where, "must be a JSON object", FIX)
    return value


def _ids(trace_id: Any, span_id: Any, where: str) -> tuple[str, str]:
    if not isinstance(trace_id, str) or not isinstance(span_id, str) or not span_id:
        raise fail(where, "a span needs a trace id and a span id (strings)", FIX)
    return trace_id.removeprefix("0x"), span_id.removeprefix("0x")


def _otlp_span(raw: Any, where: str) -> Span:
    raw = _obj(raw, where)
    trace_id, span_id = _ids(raw.get("traceId"), raw.get("spanId"), where)
    events = [(str(e.get("name", "")), attribute_map(e.get("attributes", []), f"{where}.events[{i}]"))
              for i, e in enumerate(_list(raw.get("events", []), f"{where}.events"))
              if isinstance(e, dict)]
    return Span(trace_id, span_id, str(raw.get("name", "")), where,
                attribute_map(raw.get("attributes", []), f"{where}.attributes"), events)


def _sdk_span(raw: dict, where: str) -> Span:
    ctx = _obj(raw.get("context"), f"{where}.context")
    trace_id, span_id = _ids(ctx.get("trace_id"), ctx.get("span_id"), where)
    events = [(str(e.get("name", "")), attribute_map(e.get("attributes") or {}, f"{where}.events[{i}]"))
              for i, e in enumerate(_list(raw.get("events") or [], f"{where}.events"))
              if isinstance(e, dict)]
    return Span(trace_id, span_id, str(raw.get("name", "")), where,
                attribute_map(raw.get("attributes") or {}, f"{where}.attributes"), events)


def _conversation(span: Span) -> tuple[list[Message], list[Message]] | None:
    """``(history, outputs)`` of a chat span, or None when it carries no GenAI messages."""
    a, where = span.attributes, span.where
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        system = a.get("gen_ai.system_instructions")
        history = [Message("system", _parts_text(_json(system, where, "gen_ai.system_instructions"),
                                                 where))] if system is not None else []
        history += _part_messages(a.get("gen_ai.input.messages"), where, "gen_ai.input.messages")
        return history, _part_messages(a.get("gen_ai.output.messages"), where, "gen_ai.output.messages")
    if any(_INDEXED.match(k) for k in a):
        return _indexed(a, "prompt", where), _indexed(a, "completion", where)
    flat = {**{k: v for _n, e in span.events for k, v in e.items() if k in ("gen_ai.prompt",
                                                                             "gen_ai.completion")},
            **{k: a[k] for k in ("gen_ai.prompt", "gen_ai.completion") if k in a}}
    if flat:
        return (_openai_like(flat.get("gen_ai.prompt"), where, "gen_ai.prompt", "user"),
                _openai_like(flat.get("gen_ai.completion"), where, "gen_ai.completion", "assistant"))
    events = [(n, e) for n, e in span.events if n in EVENT_ROLES or n == "gen_ai.choice"]
    if events:
        return _from_events(events, where)
    return None


def _json(value: Any, where: str, name: str) -> Any:
    """A structured attribute, or the JSON string the conventions allow in its place."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise fail(where, f"{name} is a string but not JSON",
                       "record the messages structured or as a JSON string") from None
    return value


def _parts_text(parts: Any, where: str) -> str:
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise fail(where, "message parts must be a list", 'write [{"type": "text", "content": "..."}]')
    out = []
    for part in parts:
        if not isinstance(part, dict):
            raise fail(where, "a message part must be an object", 'write {"type": "text", "content": "..."}')
        kind = part.get("type")
        if kind == "text":
            out.append(text_of(part.get("content"), where))
        elif kind == "tool_call":
            out.append(tool_call_text(part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            body = part.get("response", part.get("result"))
            out.append(tool_result_text(None, body if body is not None else ""))
        else:
            out.append(f"[{kind or 'unknown'} part]")
    return joined(*out)


def _part_messages(value: Any, where: str, name: str) -> list[Message]:
    if value is None:
        return []
    messages = _json(value, where, name)
    if not isinstance(messages, list):
        raise fail(where, f"{name} must be a list of messages",
                   'write [{"role": "user", "parts": [{"type": "text", "content": "..."}]}]')
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise fail(f"{where}: {name}[{i}]", "a message needs a 'role'",
                       'write {"role": "user", "parts": [...]}')
        out.append(Message(m["role"], _parts_text(m.get("parts", []), f"{where}: {name}[{i}]")))
    return out


def _openai_like(value: Any, where: str, name: str, role: str) -> list[Message]:
    """``gen_ai.prompt``/``gen_ai.completion``: a JSON list of chat messages, or plain text."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [Message(role, value)]
    if isinstance(value, dict):
        value = [value]
    return chat_messages(value, f"{where}: {name}")


def _indexed(a: dict[str, Any], kind: str, where: str) -> list[Message]:
    """OpenLLMetry's flattened messages: ``gen_ai.<kind>.<i>.<field>`` -> one message per i."""
    fields: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        m = _INDEXED.match(key)
        if m and m.group(1) == kind:
            fields.setdefault(int(m.group(2)), {})[m.group(3)] = value
    raw = []
    for i in sorted(fields):
        f = fields[i]
        calls = sorted({int(k.split(".")[1]) for k in f if re.match(r"^tool_calls\.\d+\.", k)})
        message: dict[str, Any] = {"role": f.get("role") or ("assistant" if kind == "completion" else "user"),
                                   "content": f.get("content")}
        if calls:
            message["tool_calls"] = [{"id": f.get(f"tool_calls.{j}.id"), "type": "function",
                                      "function": {"name": f.get(f"tool_calls.{j}.name"),
                                                   "arguments": f.get(f"tool_calls.{j}.arguments")}}
                                     for j in calls]
        if "tool_call_id" in f:
            message["tool_call_id"] = f["tool_call_id"]
        raw.append(message)
    return chat_messages(raw, f"{where}: gen_ai.{kind}")


def _from_events(events: list[tuple[str, dict[str, Any]]], where: str) -> tuple[list[Message], list[Message]]:
    history, raw_history, choices = [], [], []
    for name, e in events:
        if name == "gen_ai.choice":
            message = e.get("message")
            message = _json(message, where, "gen_ai.choice message") if message is not None else {}
            if not isinstance(message, dict):
                raise fail(where, "a gen_ai.choice event's message must be an object",
                           'write message as {"role": "assistant", "content": "..."}')
            choices.append((e.get("index", 0), {"role": "assistant", **message}))
            continue
        content = e.get("content")  # an AnyValue: structured content reads as its JSON
        if content is not None and not isinstance(content, str | list):
            content = json.dumps(content, ensure_ascii=False)
        message = {"role": EVENT_ROLES[name], "content": content}
        if name == "gen_ai.assistant.message" and e.get("tool_calls") is not None:
            message["tool_calls"] = _json(e["tool_calls"], where, "tool_calls")
        if name == "gen_ai.tool.message" and isinstance(e.get("id"), str):
            message["tool_call_id"] = e["id"]
        raw_history.append(message)
    history = chat_messages(raw_history, f"{where}: events")
    choices.sort(key=lambda c: c[0] if isinstance(c[0], int) else 0)
    outputs = chat_messages([c for _i, c in choices], f"{where}: gen_ai.choice")
    return history, outputs
