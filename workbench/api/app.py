"""The audit API as a FastAPI application: ``create_app(service, settings)``.

- ``POST /v1/audit``: a conversation, the reply to audit, optional policy (SKILL) names ->
  the verdict, P(violation) when the judge gives one, the cited rules with their policy
  spans, the judged closure and the trace id; with an ``Idempotency-Key`` header a retried
  request is stored once and answered from the first (``workbench.api.idempotency``);
- ``GET /v1/traces/{trace_id}``: the stored case and its full trace;
- ``GET /healthz``; the OpenAPI schema at ``/openapi.json`` and Swagger UI at ``/docs``
  from installed files (``workbench.api.docs``; off when they are not installed).

Before any route, ``workbench.api.guard.RequestGate`` checks the token (with one configured,
everything but the public pages needs ``Authorization: Bearer <token>``: 401 before a byte of
the body is read), the body cap (413) and the body-read deadline (408). A body is read as
the command line reads a file (``workbench.api.body``: lone surrogates and NaN are 422 naming
the field), and no error answer quotes more than a short excerpt of what was sent. With
``[api] write_ahead`` set, a request is answered once its case and trace are fsynced to a
write-ahead log and stored by a writer thread after (``workbench.api.write_ahead``). At most
``concurrency`` audits run at once and ``queue`` more wait; a request beyond that is
answered at once with 429 and ``Retry-After`` rather than piling up. Audits are stored as
the service identity ``[api] service_user``/``service_role``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from workbench.api.body import (
    BodyProblem,
    SafeJSONResponse,
    StrictJsonRoute,
    excerpt,
    shorten_message,
    validation_problem,
)
from workbench.api.contracts import CheckLimit, ContractGuard, contract_routes
from workbench.api.docs import add_docs
from workbench.api.guard import RequestGate
from workbench.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from workbench.api.idempotency import Idempotent
from workbench.api.service import AuditService, RequestError, response_body
from workbench.api.settings import ApiSettings
from workbench.api.write_ahead import WriteAheadStore, queue_dir
from workbench.errors import WorkbenchError

log = logging.getLogger(__name__)

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


class FieldProblem(BaseModel):
    field: str = Field(description="where in the body, e.g. conversation[2].content")
    problem: str


class InvalidRequest(Problem):
    fields: list[FieldProblem] = Field(default_factory=list)


HINT_CHARS = 2000  # a hint is the server's words (e.g. the served SKILL names), not the request's
HTTP_KINDS = {401: "unauthorized", 404: "not_found", 408: "timeout", 413: "too_large",
              422: "bad_request"}


def _problem(status: int, kind: str, message: str, hint: str = "",
             headers: dict[str, str] | None = None) -> JSONResponse:
    """The API's error answer; a message quoting what was sent is cut to a short excerpt."""
    return JSONResponse({"error": kind, "message": shorten_message(message),
                         "hint": shorten_message(hint, HINT_CHARS)}, status, headers=headers)


class Admission:
    """Counts requests held (auditing or waiting); the event loop is one thread, so a plain
    counter is exact. ``slots`` bounds the audits that run at once."""

    def __init__(self, settings: ApiSettings):
        self.capacity, self.held = settings.capacity, 0
        self.slots = asyncio.Semaphore(settings.concurrency)


def _write_ahead(app: FastAPI, service: AuditService, settings: ApiSettings) -> None:
    """With ``[api] write_ahead``: answered once fsynced, stored by a writer thread after."""
    if settings.write_ahead:
        service.store = WriteAheadStore(service.store, queue_dir(settings.write_ahead, service.store))
        service.store_takes_actor = True
        app.router.add_event_handler("shutdown", service.store.close)
    app.state.store = getattr(service, "store", None)


def create_app(service: AuditService, settings: ApiSettings,
               contracts: ContractGuard | None = None) -> FastAPI:
    app = FastAPI(title="SkillCDG Workbench audit API", version="1",
                  description="Audit an agent reply against the served policy index.",
                  docs_url=None, redoc_url=None, default_response_class=SafeJSONResponse)
    app.router.route_class = StrictJsonRoute  # before any route is added
    app.add_middleware(RequestGate, settings=settings)
    app.state.docs = add_docs(app)
    _write_ahead(app, service, settings)
    admission = Admission(settings)
    idempotent = Idempotent(service)
    actor = settings.actor
    if not service.store_takes_actor:
        log.warning("the API's trace store does not take actor=: cases and traces are stored as "
                    "the store's default identity, not %r", settings.service_user)
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
        if isinstance(exc, BodyProblem):
            hint = exc.hint
        return _problem(exc.status_code, HTTP_KINDS.get(exc.status_code, "http"),
                        str(exc.detail), hint, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_problem(exc), 422)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"ok": True, "held": admission.held, "capacity": admission.capacity}

    @app.post("/v1/audit", response_model=AuditResponse, dependencies=[Depends(authorised)],
              responses={401: {"model": Problem}, 408: {"model": Problem}, 413: {"model": Problem},
                         422: {"model": InvalidRequest}, 429: {"model": Problem},
                         503: {"model": Problem}})
    async def audit(request: AuditRequest, response: Response,
                    idempotency_key: str | None = Header(
                        default=None, alias=IDEMPOTENCY_HEADER,
                        description="a retried request with the same key is stored once and "
                        "answered from the first (1-255 printable ASCII characters)")) -> Any:
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
                out, replayed = await run_in_threadpool(idempotent.audit, body, idempotency_key,
                                                        actor=actor)
                response.headers.update({"Idempotent-Replayed": "true"} if replayed else {})
                return out
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
            return _problem(404, "not_found", f"no stored trace {excerpt(trace_id)!r}",
                            "use the trace_id a POST /v1/audit answered")
        case, t = found
        return {"trace_id": trace_id, "case": None if case is None else case.to_dict(),
                "trace": t.to_dict(),
                "summary": response_body(t, service.index, service.decision_setting())}

    # POST /v1/contracts/{name}/check: may an agent make this tool call now (workbench.api.contracts)
    app.include_router(contract_routes(contracts or ContractGuard.from_env(), authorised, actor,
                                       CheckLimit(settings.capacity, settings.contract_rate)))
    return app
