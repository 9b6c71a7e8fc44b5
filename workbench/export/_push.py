"""Sending a JSON payload to an ingestion endpoint: the address is checked (http or https,
no credentials in it: keys come from the environment), the request is bounded in time and
size, and what the server answered is read back."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from workbench.export.errors import ExportError
from workbench.llm.redact import has_secret, redact_text, redact_url

MAX_ANSWER = 1_000_000  # bytes of a server's answer read back


def checked_url(url: str, *, redact: bool = False) -> str:
    """``url`` when it is an http(s) address without credentials; else :class:`ExportError`.
    A key in the address would land in shell history, logs and process lists: keys are
    read from the environment instead. ``redact``: the address as it may be shown."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"--push {redact_url(url)!r} is not an http(s) address",
                          "give the endpoint's address, e.g. http://127.0.0.1:4318")
    if has_secret(url):
        raise ExportError(f"--push {redact_url(url)}: the address carries a credential "
                          "(user-info or a key parameter); it is refused",
                          "remove it from the address and set it in the environment "
                          "(see `workbench export-verdicts --help`)")
    return redact_url(url) if redact else url


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # the JSON the server answered (None when it was not JSON)


def post_json(url: str, payload: Any, headers: Mapping[str, str] | None = None, *,
              timeout: float = 30.0) -> Answer:
    """POST ``payload`` as JSON to ``url``; the answer when the server accepted it (2xx).
    Raises :class:`ExportError` (the address and the server's words, credentials masked)
    when it cannot be reached or refuses."""
    checked_url(url)
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json", **(headers or {})})
    shown = redact_url(url)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (checked)
            status, raw = response.status, response.read(MAX_ANSWER)
    except urllib.error.HTTPError as exc:
        words = redact_text(exc.read(2000).decode("utf-8", "replace"))
        hint = ("check the key in the environment" if exc.code in (401, 403)
                else "check the address and the payload (write it with --out and look)")
        raise ExportError(f"{shown} answered {exc.code} {exc.reason}: {words[:500]}", hint) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExportError(f"{shown} could not be reached: {redact_text(str(reason))}",
                          "check that the server runs and the address is right") from None
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    return Answer(status, body)
