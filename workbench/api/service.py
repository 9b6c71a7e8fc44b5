"""What one ``POST /v1/audit`` does, without the web framework: the request becomes an
:class:`AuditCase`, the case goes through the same pipeline as ``workbench audit``
(``runner.audit_one``: its strategies, window fitting and judge), the case and its trace are
kept by the injected :class:`TraceStore`, and the trace becomes the response body.

A request sent with an ``Idempotency-Key`` is stored once however often it is retried
(``workbench.api.idempotency``: it passes the case to :meth:`AuditService.audit`).

The store is injected (``workbench api`` passes the database's; tests and the benchmark may
pass a memory one), so this module stays in the core and never imports ``store/``. Every
write names who makes it: ``audit(body, actor=...)`` passes the API's service identity
(``[api] service_user``/``service_role``) to ``TraceStore.save(case, trace, actor=...)``.
"""

from __future__ import annotations

import inspect
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from workbench.alerts.hooks import audited
from workbench.audit.cases import AuditCase, Turn
from workbench.audit.importers.common import SYSTEM_ROLES, ImportFormatError
from workbench.audit.importers.openai_chat import chat_messages
from workbench.audit.pipeline import AuditOptions
from workbench.audit.policy import AuditIndex
from workbench.audit.runner import audit_one
from workbench.audit.strategies import get_strategy
from workbench.audit.trace import AuditTrace
from workbench.decision import decided_verdict
from workbench.errors import WorkbenchError
from workbench.identity.roles import Actor, require
from workbench.vocabulary import verdict_word

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

QUOTE_MAX = 600
NAME_EXCERPT = 60
# What storing a request's case and trace is, in the role table (``workbench.identity.roles``).
SAVE_ACTIONS = ("import cases", "store audit results")


class RequestError(WorkbenchError, ValueError):
    """The request cannot be audited as sent; answered 422 with the message and the fix."""


class TraceStore(Protocol):
    def save(self, case: AuditCase, trace: AuditTrace, *, actor: Actor) -> None:
        """Keep the case and its trace (the trace id is the case id), written as ``actor``
        (refused with ``roles.NotAllowed`` when its role may not)."""
        ...

    def get(self, trace_id: str) -> tuple[AuditCase | None, AuditTrace] | None:
        """The stored case and newest trace of ``trace_id``; None when there is none."""
        ...


class MemoryTraceStore:
    """A TraceStore in a dict: for tests and the benchmark, not for a served API."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[AuditCase, AuditTrace]] = {}
        self._lock = threading.Lock()

    def save(self, case: AuditCase, trace: AuditTrace, *, actor: Actor) -> None:
        for action in SAVE_ACTIONS:  # as the database's writer checks
            require(actor, action)
        with self._lock:
            self.items[trace.id] = (case, trace)

    def get(self, trace_id: str) -> tuple[AuditCase | None, AuditTrace] | None:
        with self._lock:
            return self.items.get(trace_id)


@dataclass
class AuditService:
    index: AuditIndex
    gateway: ModelGateway | None  # a workbench.llm.Gateway (the CLI's: database response cache included)
    store: TraceStore
    strategy: str = "cdg"
    options: AuditOptions = AuditOptions()
    store_takes_actor: bool = field(init=False)

    def __post_init__(self) -> None:
        self._strategy = get_strategy(self.strategy, self.gateway)  # built once (dense encoder)
        self.store_takes_actor = _takes_actor(self.store.save)

    def case_of(self, body: dict[str, Any], trace_id: str | None = None) -> AuditCase:
        """The request as a case: OpenAI-style messages (tool calls included) as history,
        the reply as text or an assistant message; policies must be SKILLs of the index."""
        try:
            history = chat_messages(body.get("conversation") or [], "conversation")
            reply = body.get("reply")
            if isinstance(reply, dict):
                [said] = chat_messages([{"role": "assistant", **reply}], "reply")
                reply = said.text
        except ImportFormatError as exc:
            raise RequestError(exc.message, exc.hint) from None
        if not isinstance(reply, str) or not reply.strip():
            raise RequestError("'reply' (the agent reply to audit) is empty",
                               "send the reply as text, or as an assistant message with tool_calls")
        policies = body.get("policies") or None
        if policies is not None:
            unknown = [p for p in policies if p not in self.index]
            if unknown:
                shown = ", ".join(repr(excerpt_name(p)) for p in unknown[:5])
                raise RequestError(f"unknown policy {shown}" + (f" (and {len(unknown) - 5} more)"
                                                                 if len(unknown) > 5 else ""),
                                   f"name SKILLs of the served index: {', '.join(self.index.names)}")
        trace_id = trace_id or f"api-{uuid.uuid4().hex}"
        extra: dict[str, Any] = {"source": {"format": "api"}}
        if body.get("client_id"):
            extra["client_id"] = str(body["client_id"])
        return AuditCase(
            id=trace_id, model_response=reply, session=str(body.get("session") or ""),
            skills=list(policies) if policies else None,
            context=[Turn(m.role, m.text) for m in history if m.role not in SYSTEM_ROLES],
            background=body.get("state"), extra=extra,
        )

    def audit(self, body: dict[str, Any], *, actor: Actor,
              case: AuditCase | None = None) -> dict[str, Any]:
        """Audit one request (as ``case`` when given, else :meth:`case_of` the body), store it
        as ``actor``, and return the response body. Fatal setup errors (no model
        configuration, an aborted endpoint, a role that may not store) raise; a failed case
        is an answer."""
        started = time.perf_counter()
        case = case or self.case_of(body)
        trace = audit_one(case, self.index, self._strategy, self.gateway, self.options)
        self.save(case, trace, actor=actor)
        out = response_body(trace, self.index, self.decision_setting())
        out["timings_ms"]["request"] = round((time.perf_counter() - started) * 1000.0, 3)
        return out

    def decision_setting(self) -> Any:
        """The (version, setting) the served dataset's cases are decided under, when the store
        knows one (``decision_setting()`` of the store: the database's does), else None."""
        read = getattr(self.store, "decision_setting", None)
        return read() if callable(read) else None

    def save(self, case: AuditCase, trace: AuditTrace, *, actor: Actor) -> None:
        if self.store_takes_actor:
            self.store.save(case, trace, actor=actor)
        else:  # a store written before writes named their actor: the role is checked here
            for action in SAVE_ACTIONS:
                require(actor, action)
            self.store.save(case, trace)
        if not getattr(self.store, "checks_alerts", False):  # the write-ahead writer does
            audited([trace], self.store)


def _takes_actor(save: Any) -> bool:
    """Whether a store's ``save`` accepts ``actor=`` (every TraceStore should; the check
    keeps an older store working while store writers are moving to a required actor)."""
    try:
        parameters = inspect.signature(save).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "actor" or p.kind is p.VAR_KEYWORD for p in parameters)


def excerpt_name(name: Any) -> str:
    text = str(name)
    return text if len(text) <= NAME_EXCERPT else f"{text[:NAME_EXCERPT]}..."


def cited_rules(trace: AuditTrace, index: AuditIndex) -> list[dict[str, Any]]:
    """Each violated rule with the policy text it stands for: SKILL, character spans and
    the text at them."""
    out = []
    for rid in trace.verdict.violated_rules if trace.verdict else []:
        where = trace.unit_spans.get(rid) or {}
        skill = where.get("skill", "")
        source = index.skill(skill).source if skill in index else ""
        spans = [{"start": s, "end": e, "text": source[s:e][:QUOTE_MAX]}
                 for s, e in where.get("spans") or []]
        out.append({"id": rid, "skill": skill, "spans": spans})
    return out


def response_body(trace: AuditTrace, index: AuditIndex, saved: Any = None) -> dict[str, Any]:
    """The answer to one audit: ``verdict`` and ``violation`` are the decided record's
    (``workbench.decision.decided_verdict`` under ``saved``, the served dataset's setting: what
    every page shows; "review" when no rule stands behind a violation), ``decided`` the whole
    record, ``judge`` the judge's own yes/no; the rest is the trace's."""
    v = trace.verdict
    probability = v.probability if v is not None else None
    record = decided_verdict(trace, saved=saved)
    record = record if record.decided is not None else None
    return {
        "trace_id": trace.id,
        "verdict": None if record is None else record.label,
        "violation": None if record is None or record.label == "review" else record.violation,
        "decided": None if record is None else record.to_json(),
        "judge": None if v is None else verdict_word(v.violation),
        "probability": probability,
        "probability_source": "" if v is None else v.probability_source,
        "evidence": [] if v is None else [dict(e) for e in v.evidence],
        "reason": "" if v is None else v.reason,
        "cited_rules": cited_rules(trace, index),
        "unknown_rule_ids": [] if v is None else list(v.unknown_rule_ids),
        "skills": list(trace.skills),
        "closure": {k: list(ids) for k, ids in trace.closure.items()},
        "closure_ids": trace.closure_ids,
        "error": None if trace.error is None else {"kind": trace.error.kind,
                                                   "message": trace.error.message},
        "model_calls": len(trace.usage),
        "timings_ms": dict(trace.timings_ms),
    }
