"""One HTTP exchange with a model, through litellm, classified for the gateway's retry loop.

The gateway owns retries, so litellm's and the OpenAI client's own retries are switched off
(``num_retries=0``, ``max_retries=0``): every attempt is visible, counted and bounded.
litellm is imported lazily: it costs seconds at start-up.
"""

from __future__ import annotations

from typing import Any, Protocol

# Importing attempts first also sets LITELLM_LOCAL_MODEL_COST_MAP before litellm loads.
# RawResponse and AttemptError are re-exported: callers import them from here.
from workbench.llm.attempts import PLACEHOLDER_KEY as _PLACEHOLDER_KEY
from workbench.llm.attempts import (  # noqa: F401
    AttemptError,
    RawResponse,
    classify,
)
from workbench.llm.attempts import to_raw as _to_raw
from workbench.llm.config import EMBEDDED, LlmConfig, RoleConfig, attached_url_of, resolve_api_key
from workbench.llm.errors import EmbeddedModelUnavailable
from workbench.llm.fleet import Fleet
from workbench.llm.redact import redact_url
from workbench.llm.weights import MODEL_ALIAS, EmbeddedModel, model_by_alias

# The default (1.5B) model's key: unchanged since the first recordings, so they replay.
EMBEDDED_KEY_MODEL = f"{EMBEDDED}/{MODEL_ALIAS}"


def embedded_key_model(model: EmbeddedModel) -> str:
    """``embedded/<alias>``: each embedded model keys its requests by its own alias."""
    return f"{EMBEDDED}/{model.alias}"


class Transport(Protocol):
    """Sends one request (the keyed request dict) for a role; raises AttemptError."""

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse: ...

    def endpoint(self, role: RoleConfig) -> str: ...


def key_model(role: RoleConfig) -> str:
    """The model name that goes into the request key (never an address).

    An embedded model reached through ``workbench model serve`` (``openai/<alias>`` at some
    api_base) is the same model as ``embedded`` / ``embedded:<name>``: both share one key, so
    recordings and cache entries made either way answer both. The two embedded models have
    different aliases, hence different keys: one never answers with the other's answers.
    """
    served = role.embedded_model
    if served is None and role.model.startswith("openai/"):
        served = model_by_alias(role.model.removeprefix("openai/"))
    return embedded_key_model(served) if served is not None else role.model


class LiteLLMTransport:
    """Live calls through ``litellm.completion``; starts the embedded server when needed."""

    def __init__(self, config: LlmConfig, on_attempt: Any = None) -> None:
        """``on_attempt``: called with each fleet role's EndpointAttempt (see llm.fleet)."""
        self._config = config
        self._embedded_url: dict[str, str] = {}  # in-process server per embedded model
        self.fleet = Fleet(config, on_attempt)

    def endpoint(self, role: RoleConfig) -> str:
        if role.is_embedded:
            if attached := attached_url_of(self._config, role):
                return redact_url(attached)
            url = self._embedded_url.get(role.embedded_name or "")
            return f"{url}/v1" if url else role.endpoint
        return role.endpoint

    def _target(self, role: RoleConfig) -> tuple[str, str | None, str | None]:
        served = role.embedded_model
        if served is not None and (attached := attached_url_of(self._config, role)):
            # [embedded].url / .small_url: a `workbench model serve` shared by several
            # processes. The request (and so its key) stays that of the embedded model.
            return f"openai/{served.alias}", attached, _PLACEHOLDER_KEY
        if served is not None:
            from workbench.llm.embedded import ensure_embedded_server

            try:
                server = ensure_embedded_server(self._config.embedded, model=served.name)
            except EmbeddedModelUnavailable as exc:
                raise AttemptError("embedded_unavailable", str(exc), retryable=False) from exc
            self._embedded_url[served.name] = server.url
            return f"openai/{served.alias}", f"{server.url}/v1", _PLACEHOLDER_KEY
        key = resolve_api_key(role)
        if key is None and role.api_base and role.model.startswith("openai/"):
            key = _PLACEHOLDER_KEY  # the OpenAI client refuses to start without one
        return role.model, role.api_base, key

    # The gateway may hand this transport a ``workbench.llm.onepass.OnePass`` for a call.
    supports_onepass = True

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str,
             onepass: Any = None) -> RawResponse:
        """``onepass``: read the prompt in this process first and send the request to the
        server slot that holds it (in-process embedded models only; ignored otherwise)."""
        if role.is_fleet:
            return self.fleet.send(request, role)
        model, api_base, api_key = self._target(role)
        kwargs: dict[str, Any] = {k: v for k, v in request.items() if k != "model"}
        kwargs.update(model=model, timeout=role.timeout, num_retries=0, max_retries=0, drop_params=True)
        if api_base:
            kwargs["api_base"] = api_base
        if api_key:
            kwargs["api_key"] = api_key
        server = self._in_process(role) if onepass is not None else None
        slot = _lease(onepass, request, server) if server is not None else None
        if slot is not None:
            # Beside the keyed request, never in it: keys and recordings stay as they were.
            kwargs["extra_body"] = {"id_slot": slot, "cache_prompt": True}
        import litellm

        litellm.suppress_debug_info = True
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # every failure is classified below
            raise classify(exc, api_key) from exc
        finally:
            if slot is not None:
                onepass.release(slot)
        return _to_raw(response)

    def _in_process(self, role: RoleConfig) -> Any:
        """The in-process embedded server of ``role`` (None for any other endpoint)."""
        served = role.embedded_model
        if served is None or attached_url_of(self._config, role):
            return None
        from workbench.llm.embedded import current_embedded_server

        return current_embedded_server(served.name)



def _lease(onepass: Any, request: dict[str, Any], server: Any) -> int | None:
    """The slot ``onepass`` read the prompt into, or None. Reading activations is an extra:
    when it fails (memory, a library that cannot read), the judge is asked as usual and the
    failure is counted, never raised."""
    try:
        return onepass.lease(request, server)
    except Exception as exc:  # any failure of the extra leaves the judge's call as it was
        import logging

        logging.getLogger(__name__).warning("could not read the judge's prompt for its "
                                            "activations (%s); the server reads it", exc)
        onepass.failures.append(str(exc))
        return None
