"""One HTTP exchange with a model, through litellm, classified for the gateway's retry loop.

The gateway owns retries, so litellm's and the OpenAI client's own retries are switched off
(``num_retries=0``, ``max_retries=0``): every attempt is visible, counted and bounded.
litellm is imported lazily: it costs seconds at start-up.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from workbench.llm.config import EMBEDDED, LlmConfig, RoleConfig, resolve_api_key
from workbench.llm.errors import EmbeddedModelUnavailable
from workbench.llm.weights import MODEL_ALIAS

# Set before litellm is imported anywhere through us: never fetch the price map online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

EMBEDDED_KEY_MODEL = f"{EMBEDDED}/{MODEL_ALIAS}"
_PLACEHOLDER_KEY = "sk-no-key-needed"  # OpenAI-compatible local servers ignore it


@dataclass(frozen=True)
class RawResponse:
    """What one successful HTTP exchange returned (also the unit of a recording)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    model: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RawResponse:
        return cls(
            text=str(data.get("text") or ""),
            finish_reason=data.get("finish_reason"),
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cost_usd=data.get("cost_usd"),
            model=str(data.get("model") or ""),
        )


class AttemptError(Exception):
    """One attempt failed. ``retryable`` says whether trying again may help."""

    def __init__(self, kind: str, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class Transport(Protocol):
    """Sends one request (the keyed request dict) for a role; raises AttemptError."""

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse: ...

    def endpoint(self, role: RoleConfig) -> str: ...


def key_model(role: RoleConfig) -> str:
    """The model name that goes into the request key (never an address).

    The embedded model reached through ``workbench model serve`` (``openai/<alias>`` at some
    api_base) is the same model as ``embedded``: both share one key, so recordings and cache
    entries made either way answer both.
    """
    if role.is_embedded or role.model == f"openai/{MODEL_ALIAS}":
        return EMBEDDED_KEY_MODEL
    return role.model


class LiteLLMTransport:
    """Live calls through ``litellm.completion``; starts the embedded server when needed."""

    def __init__(self, config: LlmConfig, on_attempt: Any = None) -> None:
        """``on_attempt``: called with each fleet role's EndpointAttempt (see llm.fleet)."""
        from workbench.llm.fleet import Fleet

        self._config = config
        self._embedded_url: str | None = None
        self.fleet = Fleet(config, on_attempt)

    def endpoint(self, role: RoleConfig) -> str:
        if role.is_embedded:
            if self._config.embedded.attached_url:
                return self._config.embedded.attached_url
            return f"{self._embedded_url}/v1" if self._embedded_url else role.endpoint
        return role.endpoint

    def _target(self, role: RoleConfig) -> tuple[str, str | None, str | None]:
        if role.is_embedded and self._config.embedded.attached_url:
            # [embedded].url: a `workbench model serve` shared by several processes. The
            # request (and so its key) stays that of the embedded model.
            return f"openai/{MODEL_ALIAS}", self._config.embedded.attached_url, _PLACEHOLDER_KEY
        if role.is_embedded:
            from workbench.llm.embedded import ensure_embedded_server

            try:
                server = ensure_embedded_server(self._config.embedded)
            except EmbeddedModelUnavailable as exc:
                raise AttemptError("embedded_unavailable", str(exc), retryable=False) from exc
            self._embedded_url = server.url
            return f"openai/{MODEL_ALIAS}", f"{server.url}/v1", _PLACEHOLDER_KEY
        key = resolve_api_key(role)
        if key is None and role.api_base and role.model.startswith("openai/"):
            key = _PLACEHOLDER_KEY  # the OpenAI client refuses to start without one
        return role.model, role.api_base, key

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse:
        if role.is_fleet:
            return self.fleet.send(request, role)
        model, api_base, api_key = self._target(role)
        kwargs: dict[str, Any] = {k: v for k, v in request.items() if k != "model"}
        kwargs.update(model=model, timeout=role.timeout, num_retries=0, max_retries=0, drop_params=True)
        if api_base:
            kwargs["api_base"] = api_base
        if api_key:
            kwargs["api_key"] = api_key
        import litellm

        litellm.suppress_debug_info = True
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # every failure is classified below
            raise classify(exc, api_key) from exc
        return _to_raw(response)


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
    value = None
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
    if secret and secret != _PLACEHOLDER_KEY:
        text = text.replace(secret, "***")
    text = _LITELLM_PREFIX.sub("", " ".join(text.split())) or text
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _to_raw(response: Any) -> RawResponse:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise AttemptError("malformed_response", "the server answered with no choices", retryable=True)
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    if text is None:
        text = ""
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return RawResponse(
        text=str(text),
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        model=str(getattr(response, "model", "") or ""),
    )


def monotonic_ms() -> float:
    return time.perf_counter() * 1000.0
