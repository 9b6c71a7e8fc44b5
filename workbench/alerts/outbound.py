"""The one outbound HTTP client: every webhook post and every ``export-verdicts --push``
goes through :func:`post`.

- **Only where it was told.** The address passes ``workbench.alerts.destinations`` (http(s),
  no credential in it, no internal address unless an admin allowed the host) before
  anything is sent, and again at connect time: the name is resolved, every address checked,
  and the connection made to a checked address (:class:`_PinnedBackend`; TLS still verifies
  the name and sends it as SNI, and ``Host`` is the name). A name that resolves elsewhere a
  moment later does not reach a refused address.
- **Redirects are not followed.** A 3xx is a failure naming the new address (credentials
  masked): credentials in headers go to the configured host or nowhere.
- **A total deadline per post**, not per read: connecting, sending and reading the answer
  together end at ``deadline_s``; a receiver that answers one byte every few seconds is cut
  off at the deadline like one that never answers.
- **Only a 2xx delivers.** Any other answer, and any failure to connect or finish in time, is
  an :class:`OutboundError` saying what happened; nothing is retried here (the alert outbox
  retries per destination, an export reports how many went out).
- Proxies, ``.netrc`` and other ambient settings are not read (``trust_env=False``): a proxy
  would connect where the check did not look. TLS trusts the system's certificates
  (``SSL_CERT_FILE``/``SSL_CERT_DIR`` are honoured).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from workbench.alerts.destinations import (
    Destination,
    DestinationRefused,
    OutboundError,
    check_url,
    checked_addresses,
)
from workbench.llm.redact import redact_text, redact_url

DEFAULT_DEADLINE_S = 10.0
MAX_ANSWER_BYTES = 1_000_000  # of a receiver's answer read back
USER_AGENT = "skillcdg-workbench"

__all__ = ["Answer", "DestinationRefused", "OutboundError", "post", "post_json"]


@dataclass(frozen=True)
class Answer:
    """A receiver's 2xx answer: its status, the body read (at most ``MAX_ANSWER_BYTES``),
    and the body as JSON when it is JSON (else None)."""

    status: int
    content: bytes
    json: Any = None


def post(url: str, content: bytes, headers: Mapping[str, str] | None = None, *,
         deadline_s: float = DEFAULT_DEADLINE_S, allow: Iterable[str] | None = None,
         what: str = "address") -> Answer:
    """POST ``content`` to ``url`` (see the module doc); the answer when it is 2xx.

    Raises :class:`DestinationRefused` when the address may not be sent to (nothing was
    sent) and :class:`OutboundError` when the post did not deliver: unreachable, past the
    deadline, a redirect, or another answer than 2xx. ``allow``: the allowed hosts (default
    ``destinations.allowed_hosts()``, read now)."""
    dest = check_url(url, what)
    deadline = time.monotonic() + deadline_s
    transport = _PinnedTransport(_PinnedBackend(dest, deadline, allow))
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    try:
        with httpx.Client(transport=transport, follow_redirects=False, trust_env=False,
                          timeout=httpx.Timeout(deadline_s)) as client, \
                client.stream("POST", url, content=content, headers=sent) as response:
            status = response.status_code
            if 300 <= status < 400:
                raise _redirected(dest, response)
            body = _read(response, MAX_ANSWER_BYTES)
    except httpx.TimeoutException:
        raise OutboundError(f"{dest.shown} did not answer within {deadline_s:g} s (the "
                            "whole post); nothing is known to be delivered",
                            "check that the receiver is up and answers promptly") from None
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise OutboundError(f"{dest.shown} could not be reached: "
                            f"{redact_text(str(exc) or type(exc).__name__)[:300]}",
                            "check that the receiver runs and the address is right") from None
    if not 200 <= status < 300:
        words = redact_text(body[:2000].decode("utf-8", "replace")).strip()
        raise OutboundError(
            f"{dest.shown} answered {status} {response.reason_phrase}"
            + (f": {words[:500]}" if words else ""),
            "check the key in the environment" if status in (401, 403) else
            "check the address and what the receiver expects")
    return Answer(status, body, _json(body))


def post_json(url: str, payload: Any, headers: Mapping[str, str] | None = None, *,
              deadline_s: float = DEFAULT_DEADLINE_S, allow: Iterable[str] | None = None,
              what: str = "address") -> Answer:
    """:func:`post` with ``payload`` as JSON (UTF-8)."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return post(url, data, {"Content-Type": "application/json", "Accept": "application/json",
                            **(headers or {})}, deadline_s=deadline_s, allow=allow, what=what)


def _redirected(dest: Destination, response: httpx.Response) -> OutboundError:
    location = response.headers.get("location", "")
    where = redact_url(location)[:300] if location else "no address given"
    return OutboundError(
        f"{dest.shown} answered {response.status_code} (a redirect to {where}); redirects are "
        "not followed, so nothing was delivered",
        "give the final address (the one the redirect names, if you trust it)")


def _read(response: httpx.Response, limit: int) -> bytes:
    parts, size = [], 0
    for chunk in response.iter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


# -- connecting to the checked address ---------------------------------------------------------

class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read and write ends by the post's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float):
        self._inner, self._deadline = inner, deadline

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error("the post's deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      self._left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects only to ``dest``'s host, at an address :func:`checked_addresses` returned for
    it at this moment (the name stays the TLS server name and the ``Host``)."""

    def __init__(self, dest: Destination, deadline: float, allow: Iterable[str] | None):
        self.dest, self.deadline, self.allow = dest, deadline, allow
        self._tcp = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        if host.lower().rstrip(".").strip("[]") != self.dest.host.strip("[]") or port != self.dest.port:
            raise DestinationRefused(f"a connection to {host}:{port} was asked for while "
                                     f"posting to {self.dest.shown}; refused",
                                     "this is a bug: report it")
        addresses = checked_addresses(host, port, allow=self.allow)
        last: Exception | None = None
        for ip in addresses:
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            try:
                stream = self._tcp.connect_tcp(str(ip), port, min(timeout or left, left),
                                               local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            return _DeadlineStream(stream, self.deadline)
        if last is not None:
            raise last
        raise httpcore.ConnectTimeout("the post's deadline passed before connecting")

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise DestinationRefused("unix sockets are not outbound destinations", "")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's transport with the connection pool on :class:`_PinnedBackend` (one
    connection, HTTP/1.1, no retries)."""

    def __init__(self, backend: _PinnedBackend):
        context = httpx.create_ssl_context()
        super().__init__(verify=context, trust_env=False, retries=0)
        self._pool = httpcore.ConnectionPool(ssl_context=context, max_connections=1,
                                             http1=True, http2=False, retries=0,
                                             network_backend=backend)
