"""How the API is served: uvicorn with the connection timeouts the ASGI app cannot set.

The app (``workbench.api.guard``) bounds what happens once a request's headers are in: the
token, the body cap, the body-read deadline. Before that, only the server sees the
connection, so :func:`server_config` sets:

- ``[api] header_timeout_s``: a connection whose request line and headers are not complete
  this long after it opened (or after its previous answer) is closed, so a client that
  connects and sends nothing, or drips a header a byte at a time, is not held (uvicorn's
  h11 protocol has no such limit: :class:`HeaderTimeoutH11`);
- ``[api] keep_alive_s``: uvicorn's ``timeout_keep_alive``, for idle connections between
  requests;
- h11's 16 KiB limit on a request's headers stays (a longer header block is 400).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from workbench.api.settings import ApiSettings


class HeaderTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose next request's headers have not
    arrived within ``header_timeout_s``."""

    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        if not self.transport.is_closing():
            # A new request replaces ``self.scope``; the timer closes the connection only if
            # it is still the one it saw (no request's headers completed meanwhile).
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_deadline,
                                                      self.scope)

    def _cancel_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _header_deadline(self, scope_then: Any) -> None:
        self._header_timer = None
        if self.scope is not scope_then or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered (pipelined data arrived early)
        try:
            self.conn.send(h11.ConnectionClosed())
        except h11.LocalProtocolError:
            pass  # mid-request from h11's side: closing the transport is enough
        self.transport.close()


def protocol_for(settings: ApiSettings) -> type[HeaderTimeoutH11]:
    return type("ApiH11Protocol", (HeaderTimeoutH11,), {"header_timeout_s": settings.header_timeout_s})


def server_config(app: Any, settings: ApiSettings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration ``workbench api`` should serve ``app`` with."""
    options: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "log_level": "warning",
        "http": protocol_for(settings), "timeout_keep_alive": settings.keep_alive_s,
    }
    return uvicorn.Config(app, **{**options, **overrides})


def serve(app: Any, settings: ApiSettings) -> None:
    """Serve ``app`` until stopped (what ``workbench api`` runs)."""
    uvicorn.Server(server_config(app, settings)).run()
