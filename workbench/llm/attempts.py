"""What one attempt at a model call gives: a ``RawResponse``, or an ``AttemptError`` that says
whether trying again may help, with litellm's exceptions classified into those kinds.

Shared by ``workbench.llm.transport`` (one server) and ``workbench.llm.fleet`` (several
servers behind a litellm Router). It lives apart from both because the transport builds a
fleet: were these in the transport, the fleet would import the module that imports it.
litellm is imported lazily: it costs seconds at start-up.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Any

from workbench.llm.logprobs import compact_logprobs

# Set before litellm is imported anywhere through us: never fetch the price map online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PLACEHOLDER_KEY = "sk-no-key-needed"  # OpenAI-compatible local servers ignore it


@dataclass(frozen=True)
class RawResponse:
    """What one successful HTTP exchange returned (also the unit of a recording)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    model: str
    # Token log-probabilities when asked for and given (``workbench.llm.logprobs`` form:
    # ``[[token, logprob, [[alternative, logprob], ...]], ...]``), else None.
    logprobs: list[Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if out["logprobs"] is None:
            del out["logprobs"]  # recordings made without them stay byte-identical
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RawResponse:
        return cls(
            text=str(data.get("text") or ""),
            finish_reason=data.get("finish_reason"),
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cost_usd=data.get("cost_usd"),
            model=str(data.get("model") or ""),
            logprobs=compact_logprobs(data.get("logprobs")),
        )


class AttemptError(Exception):
    """One attempt failed. ``retryable`` says whether trying again may help."""

    def __init__(self, kind: str, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


def classify(exc: BaseException, secret: str | None = None) -> AttemptError:
    """Map a litellm/OpenAI/httpx exception to an AttemptError (scrubbing the key)."""
    import litellm

    message = _short(str(exc) or type(exc).__name__, secret)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.Timeout) or "timed out" in message.lower():
        return AttemptError("timeout", f"no answer within the timeout ({message})", retryable=True)
    if isinstance(exc, litellm.ContextWindowExceededError) or "exceeds the available context" in (message):
        return AttemptError("context_overflow", message, retryable=False)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return AttemptError("rate_limited", message, retryable=True, retry_after=_retry_after(exc))
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError) or status in (
        401,
        403,
    ):
        return AttemptError("auth", message, retryable=False)
    if status in (None, 500) and (isinstance(exc, litellm.APIConnectionError | litellm.InternalServerError)):
        # litellm reports refused or cut connections and unparseable bodies as these, with
        # the cause only in the text.
        if _looks_malformed(message):
            return AttemptError("malformed_response", message, retryable=True)
        if "connection error" in message.lower() or isinstance(exc, litellm.APIConnectionError):
            return AttemptError("connection", message, retryable=True)
    if isinstance(status, int) and status >= 500:
        return AttemptError("server_error", message, retryable=True)
    if isinstance(exc, litellm.BadRequestError | litellm.NotFoundError) or (
        isinstance(status, int) and 400 <= status < 500
    ):
        return AttemptError("bad_request", message, retryable=False)
    if _looks_malformed(message) or isinstance(exc, ValueError | KeyError | TypeError):
        return AttemptError("malformed_response", message, retryable=True)
    return AttemptError("connection", message, retryable=True)


def _looks_malformed(message: str) -> bool:
    lowered = message.lower()
    return any(
        s in lowered for s in ("expecting value", "unterminated", "decode", "received response", "validation")
    )


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None) or {}
    response = getattr(exc, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


_LITELLM_PREFIX = re.compile(r"^(litellm\.\w+: )?(\w+Error: )?(OpenAIException - )?")


def _short(text: str, secret: str | None, limit: int = 400) -> str:
    if secret and secret != PLACEHOLDER_KEY:
        text = text.replace(secret, "***")
    text = _LITELLM_PREFIX.sub("", " ".join(text.split())) or text
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_raw(response: Any) -> RawResponse:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise AttemptError("malformed_response", "the server answered with no choices", retryable=True)
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return RawResponse(
        text="" if text is None else str(text),
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        model=str(getattr(response, "model", "") or ""),
        logprobs=compact_logprobs(getattr(choice, "logprobs", None)),
    )
