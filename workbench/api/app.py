"""The audit API as a FastAPI application: ``create_app(service, settings)``.

- ``POST /v1/audit``: a conversation, the reply to audit, optional policy (SKILL) names ->
  the verdict, P(violation) when the judge gives one, the cited rules with their policy
  spans, the judged closure and the trace id;
- ``GET /v1/traces/{trace_id}``: the stored case and its full trace;
- ``GET /healthz``; the OpenAPI schema at ``/openapi.json`` (and ``/docs``).

With a token configured every ``/v1`` call needs ``Authorization: Bearer <token>`` (401
otherwise). At most ``concurrency`` audits run at once and ``queue`` more wait; a request
beyond that is answered at once with 429 and ``Retry-After`` rather than piling up.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from workbench.api.service import AuditService, RequestError, response_body
from workbench.api.settings import ApiSettings
from workbench.errors import WorkbenchError

RETRY_AFTER_S = 1


class Message(BaseModel, extra="allow"):
    role: str = Field(description="user, assistant, tool (or system: not judged)")
    content: str | list[Any] | None = Field(default=None, description="text or content parts")


class AuditRequest(BaseModel):
    conversation: list[Message] = Field(
        default_factory=list,
        description="the turns before the reply, as OpenAI chat messages (tool_calls and "
        "tool messages are kept as turns)")
    reply: str | dict[str, Any] = Field(
        description="the agent reply to audit: text, or an assistant message with tool_calls")
    policies: list[str] | None = Field(
        default=None, description="SKILL names to audit against (default: routed by keywords)")
    state: dict[str, Any] | list[Any] | str | None = Field(
        default=None, description="the environment state the agent saw (optional)")
    session: str = ""
    client_id: str | None = Field(default=None, description="your own id of this reply, stored with it")


class Span(BaseModel):
    start: int
    end: int
    text: str


class CitedRule(BaseModel):
    id: str
    skill: str
    spans: list[Span]


class AuditError(BaseModel):
    kind: str
    message: str


class Evidence(BaseModel):
    start: int = Field(description="character offset into the reply")
    end: int
    quote: str = Field(description="the reply's text at [start, end)")


class AuditResponse(BaseModel):
    trace_id: str
    verdict: str | None = Field(description="violation, compliant, or null when not judged")
    violation: bool | None
    probability: float | None = Field(description="P(violation) when the judge gives one")
    probability_source: str = Field("", description="logprobs, sampled:K, or empty")
    evidence: list[Evidence] = Field(default_factory=list,
                                     description="the words of the reply the verdict rests on")
    reason: str
    cited_rules: list[CitedRule]
    unknown_rule_ids: list[str]
    skills: list[str]
    closure: dict[str, list[str]]
    closure_ids: list[str]
    error: AuditError | None
    model_calls: int
    timings_ms: dict[str, float]


class Problem(BaseModel):
    error: str
    message: str
    hint: str = ""


def _problem(status: int, kind: str, message: str, hint: str = "",
             headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message, "hint": hint}, status, headers=headers)


class Admission:
    """Counts requests held (auditing or waiting); the event loop is one thread, so a plain
    counter is exact. ``slots`` bounds the audits that run at once."""

    def __init__(self, settings: ApiSettings):
        self.capacity, self.held = settings.capacity, 0
        self.slots = asyncio.Semaphore(settings.concurrency)


def create_app(service: AuditService, settings: ApiSettings) -> FastAPI:
    app = FastAPI(title="SkillCDG Workbench audit API", version="1",
                  description="Audit an agent reply against the served policy index.")
    admission = Admission(settings)
    bearer = Depends(HTTPBearer(auto_error=False))

    def authorised(credentials: HTTPAuthorizationCredentials | None = bearer) -> None:
        if not settings.token:
            return
        given = credentials.credentials if credentials is not None else ""
        if not secrets.compare_digest(given.encode(), settings.token.encode()):
            raise HTTPException(401, "missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(HTTPException)
    async def http_problem(_request: Request, exc: HTTPException) -> JSONResponse:
        hint = "send Authorization: Bearer <the configured token>" if exc.status_code == 401 else ""
        return _problem(exc.status_code, "unauthorized" if exc.status_code == 401 else "http",
                        str(exc.detail), hint, exc.headers)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"ok": True, "held": admission.held, "capacity": admission.capacity}

    @app.post("/v1/audit", response_model=AuditResponse, dependencies=[Depends(authorised)],
              responses={401: {"model": Problem}, 422: {"model": Problem}, 429: {"model": Problem},
                         503: {"model": Problem}})
    async def audit(request: AuditRequest) -> Any:
        if admission.held >= admission.capacity:
            return _problem(
                429, "busy", f"the audit API is full: {settings.concurrency} audits running and "
                f"{settings.queue} waiting", f"retry after {RETRY_AFTER_S} s, or raise [api] "
                "concurrency/queue", {"Retry-After": str(RETRY_AFTER_S)})
        admission.held += 1
        try:
            async with admission.slots:
                body = request.model_dump(exclude_none=False)
                body["conversation"] = [m.model_dump(exclude_none=True) for m in request.conversation]
                return await run_in_threadpool(service.audit, body)
        except RequestError as exc:
            return _problem(422, "bad_request", exc.message, exc.hint)
        except WorkbenchError as exc:  # fatal setup errors: the model endpoint, the configuration
            return _problem(503, "unavailable", exc.message, exc.hint)
        finally:
            admission.held -= 1

    @app.get("/v1/traces/{trace_id}", dependencies=[Depends(authorised)],
             responses={401: {"model": Problem}, 404: {"model": Problem}})
    async def trace(trace_id: str) -> Any:
        found = await run_in_threadpool(service.store.get, trace_id)
        if found is None:
            return _problem(404, "not_found", f"no stored trace {trace_id!r}",
                            "use the trace_id a POST /v1/audit answered")
        case, t = found
        return {"trace_id": trace_id, "case": None if case is None else case.to_dict(),
                "trace": t.to_dict(), "summary": response_body(t, service.index)}

    return app
