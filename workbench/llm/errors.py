"""Typed errors of the model gateway. Each message says what happened and what to check."""

from __future__ import annotations

from typing import Any

from workbench.errors import WorkbenchError
from workbench.llm.redact import redact_text, redact_url

# An error message ends up in every trace, the JSONL output and the database: a model that
# answers 5 MB of junk must not make each failed case cost 10 MB. 2,000 characters keep the
# what/where/hint of any real message and the start of the offending answer.
MAX_MESSAGE_CHARS = 2000


def bound_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters, else its start with a marker saying it was
    cut and how long it was; the result never exceeds ``limit``. Bounding twice changes nothing."""
    if len(text) <= limit:
        return text
    marker = f" … [cut: {len(text):,} characters in all]"
    return text[: max(0, limit - len(marker))] + marker


class LlmConfigError(WorkbenchError, ValueError):
    """The model configuration (workbench.toml or WORKBENCH_* variables) is invalid."""

    fatal = True


class ModelCallError(WorkbenchError, RuntimeError):
    """A model call failed for good (after retries and the one repair attempt).

    Attributes name where it went: ``role``, ``model``, ``endpoint`` (the api_base, or the
    provider when litellm chooses it), ``kind`` (one of ``timeout``, ``rate_limited``,
    ``server_error``, ``connection``, ``bad_request``, ``auth``, ``context_overflow``,
    ``malformed_response``, ``invalid_output``, ``embedded_unavailable``), ``attempts``
    (HTTP requests made) and ``hint`` (what to check).
    """

    def __init__(
        self,
        message: str,
        *,
        role: str = "",
        model: str = "",
        endpoint: str = "",
        kind: str = "",
        attempts: int = 0,
        hint: str = "",
    ) -> None:
        # Credentials in the address never reach a message (traces, the store, pages, logs).
        endpoint, message, hint = redact_url(endpoint), redact_text(message), redact_text(hint)
        self.role = role
        self.model = model
        self.endpoint = endpoint
        self.kind = kind
        self.attempts = attempts
        # The failed call's Usage (tokens of every attempt), set by the gateway: they were spent.
        self.usage: Any = None
        message = bound_message(message)
        self.detail = message
        where = f"{role} call to {model}" if role else f"call to {model}"
        if endpoint:
            where += f" at {endpoint}"
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
        text = f"{where} failed{tries}: {message.rstrip('. ')}"
        if hint:
            text += f". Check: {hint}"
        super().__init__(bound_message(text))
        self.hint = hint  # after the base's __init__: what to check, already in the text


class EmbeddedModelUnavailable(WorkbenchError, RuntimeError):
    """The embedded model cannot run: a package is missing, the weights fail their hash,
    or the server did not come up. The message says how to fix it."""

    fatal = True


class MissingRecording(WorkbenchError, LookupError):
    """Replay mode met a request that has no recorded response.

    Deliberately not a ModelCallError: code that tolerates failed model calls must not
    swallow this, because a replay that silently skips calls proves nothing.
    """

    fatal = True  # a replay that skips calls proves nothing: stop the run

    def __init__(self, key: str, role: str, preview: str, source: str, record_hint: str) -> None:
        self.key = key
        self.role = role
        super().__init__(
            f"no recorded response for request {key} (role {role or '?'}) in {source}.\n"
            f"  request: {preview}\n"
            f"  Record it by running the same code against the real model:\n"
            f"    {record_hint}"
        )
