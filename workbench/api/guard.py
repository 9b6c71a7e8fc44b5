"""The API's gate, at the ASGI level: what is decided about a request before the app reads
a byte of its body, for every route.

1. **The token first.** With a token configured, a request without ``Authorization: Bearer
   <token>`` is answered 401 at once and its body is never read. Only body-less ``GET``/
   ``HEAD`` requests to the public pages (:data:`PUBLIC_PATHS`: health, the OpenAPI schema,
   the docs) pass without it.
2. **A body cap.** A declared ``Content-Length`` over ``[api] max_body_bytes`` is 413 before
   reading; a chunked body is counted as it streams in and refused (413) the moment it
   passes the cap.
3. **A body-read deadline.** The whole body must arrive within ``[api] body_timeout_s`` of
   the request's headers; a client that declares a body and stops sending is answered 408.

Every refusal carries ``Connection: close``, so uvicorn closes the connection instead of
draining the rest of the body, and so does an answer sent before the app read all of a
body. Refusals are the API's problem JSON (``error``, ``message``, ``hint``) and name the
setting. (Timeouts before the headers are complete are the server's: ``workbench.api.server``.)
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.api.settings import ApiSettings, setting_name
from workbench.errors import WorkbenchError

PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
PUBLIC_PREFIXES = ("/docs/assets/",)
CLOSE = (b"connection", b"close")


class BodyRefused(WorkbenchError, Exception):
    """Raised from the gate's ``receive`` when a body passes the cap or its deadline; the
    gate answers ``status`` however the app reacts to the exception."""

    def __init__(self, status: int, kind: str, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.status, self.kind = status, kind


def problem_response(status: int, kind: str, message: str, hint: str = "",
                     headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message, "hint": hint}, status,
                        headers={**(headers or {}), "Connection": "close"})


def _mib(n: int) -> str:
    return f"{n:,} bytes ({n / 2**20:.1f} MiB)"


class RequestGate:
    """ASGI middleware in front of the API (``app.add_middleware(RequestGate, settings=...)``)."""

    def __init__(self, app: ASGIApp, settings: ApiSettings) -> None:
        self.app, self.settings = app, settings
        self._token = settings.token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body = _GuardedBody(receive, send, self.settings, has_body=_has_body(headers))
        try:
            await self.app(scope, body.receive, body.send)
        except BodyRefused as exc:
            body.refused = body.refused or exc
        if body.refused is not None and not body.answered:
            exc = body.refused
            await problem_response(exc.status, exc.kind, exc.message, exc.hint)(scope, receive, send)

    def refusal(self, scope: Scope, headers: Headers) -> JSONResponse | None:
        """What to answer before any body is read: 400 for a Content-Length that is not a
        number, 401 without the token, 413 for a declared body over the cap; None to go on."""
        raw_length = headers.get("content-length")
        length = None
        if raw_length is not None:
            if not raw_length.strip().isdigit():
                return problem_response(400, "bad_request", "the Content-Length header is not a number",
                                        "send the body's size in bytes, or use chunked encoding")
            length = int(raw_length)
        if self._token and not self._authorised(headers) and not _public(scope, headers):
            return problem_response(401, "unauthorized", "missing or wrong bearer token",
                                    "send Authorization: Bearer <the configured token>",
                                    {"WWW-Authenticate": "Bearer"})
        cap = self.settings.max_body_bytes
        if length is not None and length > cap:
            return problem_response(
                413, "too_large", f"the request body is {_mib(length)}; the API takes at most "
                f"{_mib(cap)}", f"send a shorter conversation, or raise {setting_name('max_body_bytes')}")
        return None

    def _authorised(self, headers: Headers) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return secrets.compare_digest(given.strip().encode(), self._token)


def _has_body(headers: Headers) -> bool:
    return (headers.get("content-length", "0").strip() not in ("", "0")
            or "transfer-encoding" in headers)


def _public(scope: Scope, headers: Headers) -> bool:
    path = scope.get("path", "")
    return (scope.get("method") in ("GET", "HEAD") and not _has_body(headers)
            and (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)))


class _GuardedBody:
    """The app's ``receive`` and ``send`` for one request: bytes counted against the cap,
    the deadline applied while the body is incomplete, the refusal answered in place of
    whatever the app makes of it."""

    def __init__(self, receive: Receive, send: Send, settings: ApiSettings, has_body: bool) -> None:
        self._receive, self._send, self.settings = receive, send, settings
        self.deadline = time.monotonic() + settings.body_timeout_s
        self.received, self.complete = 0, not has_body
        self.refused: BodyRefused | None = None
        self.started = self.answered = False

    async def receive(self) -> Message:
        if self.complete or self.refused is not None:
            return await self._receive()
        try:
            message = await asyncio.wait_for(self._receive(), max(self.deadline - time.monotonic(), 0))
        except TimeoutError:
            self.refused = BodyRefused(
                408, "timeout", f"the request body did not arrive within "
                f"{self.settings.body_timeout_s:g} s ({self.received:,} bytes came)",
                f"send the whole body at once, or raise {setting_name('body_timeout_s')}")
            raise self.refused from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.settings.max_body_bytes:
                self.refused = BodyRefused(
                    413, "too_large", f"the request body passed {_mib(self.settings.max_body_bytes)}, "
                    "the most the API takes",
                    f"send a shorter conversation, or raise {setting_name('max_body_bytes')}")
                raise self.refused
            self.complete = not message.get("more_body", False)
        else:
            self.complete = True  # http.disconnect: nothing more will come
        return message

    async def send(self, message: Message) -> None:
        if self.refused is not None:
            # The app turned the refusal into an answer of its own (FastAPI: 400 "error
            # parsing the body"); the refusal is the answer.
            if message["type"] == "http.response.start" and not self.started:
                self.started = self.answered = True
                exc = self.refused
                await problem_response(exc.status, exc.kind, exc.message, exc.hint)(
                    {"type": "http"}, self._receive, self._send)
            return
        if message["type"] == "http.response.start":
            self.started = self.answered = True
            if not self.complete:  # answered before the body was read: do not drain the rest
                message = {**message, "headers": [*_headers(message), CLOSE]}
        await self._send(message)


def _headers(message: Message) -> list[Any]:
    return [h for h in message.get("headers", []) if h[0].lower() != b"connection"]
