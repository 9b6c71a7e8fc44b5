"""Sending verdicts to an ingestion endpoint through the workbench's one outbound client
(``workbench.alerts.outbound``): the address is checked before any work (http or https, no
credentials in it: keys come from the environment; no internal address unless an admin
allowed the host) and again at connect time; redirects are not followed (a 3xx is a
failure naming the new address, so a key never reaches another host); each request has a
total deadline; only a 2xx counts as sent.

A push made of several requests (Langfuse and Phoenix batches) stops at the first failure
and says how many went out before it (:class:`PushFailed`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.alerts import outbound
from workbench.alerts.destinations import OutboundError, check_destination, check_url
from workbench.alerts.outbound import Answer
from workbench.export.errors import ExportError

__all__ = ["Answer", "PushFailed", "checked_url", "post_bytes", "post_json", "push_failed", "with_path"]


class PushFailed(ExportError):
    """A push stopped part-way: ``delivered`` of ``total`` went out before the failure."""

    def __init__(self, message: str, hint: str = "", *, delivered: int = 0, total: int = 0):
        super().__init__(message, hint)
        self.delivered, self.total = delivered, total


def checked_url(url: str, *, redact: bool = False, resolve: bool = False) -> str:
    """``url`` when it may be pushed to (``resolve``: its host looked up and checked too);
    else :class:`ExportError`. ``redact``: the address as it may be shown."""
    try:
        dest = check_destination(url, "--push") if resolve else check_url(url, "--push")
    except OutboundError as exc:
        raise ExportError(exc.message, exc.hint) from None
    return dest.shown if redact else url


def with_path(url: str, path: str) -> str:
    """``url`` ending in ``path`` (an ingestion API's): kept when it already does, else
    ``path`` appended to its path; a query stays at the end."""
    base, sep, query = url.partition("?")
    if not base.rstrip("/").endswith(path):
        base = base.rstrip("/") + path
    return base + sep + query


def post_json(url: str, payload: Any, headers: Mapping[str, str] | None = None, *,
                 timeout: float = 30.0) -> Answer:
    """POST ``payload`` as JSON; the 2xx answer, else :class:`ExportError` (the address and
    what happened, credentials masked). ``timeout``: the whole request's deadline."""
    try:
        return outbound.post_json(url, payload, headers, deadline_s=timeout, what="--push")
    except OutboundError as exc:
        raise ExportError(exc.message, exc.hint) from None


def post_bytes(url: str, content: bytes, headers: Mapping[str, str], *,
               timeout: float = 30.0) -> Answer:
    """POST ``content`` as is (e.g. OTLP protobuf); as :func:`post_json`."""
    try:
        return outbound.post(url, content, headers, deadline_s=timeout, what="--push")
    except OutboundError as exc:
        raise ExportError(exc.message, exc.hint) from None


def push_failed(exc: ExportError, what: str, delivered: int, total: int) -> PushFailed:
    """``exc`` restated with the count: "12 of 40 scores were delivered before ..."."""
    return PushFailed(f"{delivered} of {total} {what} delivered before a request failed: "
                      f"{exc.message}", exc.hint, delivered=delivered, total=total)
