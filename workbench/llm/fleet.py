"""Several servers of one model for a role, called through the litellm ``Router``.

A role whose configuration lists ``endpoints`` is a *fleet*: every endpoint serves the same
model, so any of them may answer any request, and the request key (hence the response
cache and recordings) stays that of the model, never of the server that answered.

The Router picks the endpoint (``routing``), puts one that fails into cooldown for
``cooldown`` seconds and routes around it. Retries stay with the gateway, as for a single
server (the Router's own retries are off): each retry is routed again, so a retry after a
dead endpoint lands on a live one. What each endpoint did is counted here
(:class:`EndpointStats`) and reported to an optional ``on_attempt`` callback, e.g. the
store's endpoint log that the Settings page reads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.llm.attempts import PLACEHOLDER_KEY as _PLACEHOLDER_KEY
from workbench.llm.attempts import AttemptError, RawResponse, classify, to_raw
from workbench.llm.config import LlmConfig, RoleConfig, attached_url_of, resolve_api_key
from workbench.llm.redact import redact_url

log = logging.getLogger("workbench.llm")


@dataclass(frozen=True)
class EndpointAttempt:
    """One HTTP attempt of a fleet role, as the Router routed it."""

    role: str
    endpoint: str
    ok: bool
    error: str = ""  # the AttemptError kind when it failed
    latency_ms: float = 0.0


@dataclass
class EndpointStats:
    """What one endpoint of a fleet did in this process."""

    calls: int = 0
    failures: int = 0
    last_error: str = ""
    last_failure_at: float | None = None  # time.monotonic()
    last_ok_at: float | None = None

    def health(self, cooldown: float, now: float | None = None) -> str:
        """``unused``, ``ok``, or ``cooling down`` (its last attempt failed less than
        ``cooldown`` seconds ago and none succeeded since: the Router avoids it)."""
        now = time.monotonic() if now is None else now
        if self.calls == 0:
            return "unused"
        failed_last = self.last_failure_at is not None and (
            self.last_ok_at is None or self.last_failure_at > self.last_ok_at
        )
        if failed_last and now - (self.last_failure_at or 0.0) < cooldown:
            return "cooling down"
        return "ok"


def shares(counts: dict[str, int]) -> dict[str, float]:
    """Each endpoint's fraction of the calls (0.0 each when there were none)."""
    total = sum(counts.values())
    return {e: (n / total if total else 0.0) for e, n in counts.items()}


class Fleet:
    """One litellm Router per fleet role, built on first use. Thread-safe."""

    def __init__(
        self, config: LlmConfig, on_attempt: Callable[[EndpointAttempt], None] | None = None
    ) -> None:
        self._config = config
        self._on_attempt = on_attempt
        self._lock = threading.Lock()
        self._routers: dict[str, Any] = {}
        self._stats: dict[str, dict[str, EndpointStats]] = {}

    def send(self, request: dict[str, Any], role: RoleConfig) -> RawResponse:
        """One attempt through the role's Router; raises AttemptError (never a raw exception)."""
        router, api_key = self._router(role)
        kwargs: dict[str, Any] = {k: v for k, v in request.items() if k != "model"}
        kwargs.update(model=role.name, num_retries=0, max_retries=0, drop_params=True)
        started = time.perf_counter()
        try:
            response = router.completion(**kwargs)
        except Exception as exc:  # classified like a single server's failure
            endpoint = str(getattr(exc, "failed_deployment_id", "") or "?")
            error = classify(exc, api_key)
            self._note(role, endpoint, False, error.kind, started)
            raise error from exc
        hidden = getattr(response, "_hidden_params", None) or {}
        endpoint = str(hidden.get("model_id") or hidden.get("api_base") or "?")
        try:
            raw = to_raw(response)
        except AttemptError as error:
            self._note(role, endpoint, False, error.kind, started)
            raise
        self._note(role, endpoint, True, "", started)
        return raw

    def stats(self, role: str) -> dict[str, EndpointStats]:
        """Copies of the per-endpoint counts of ``role`` (empty before its first call)."""
        with self._lock:
            return {e: EndpointStats(**vars(s)) for e, s in self._stats.get(role, {}).items()}

    def _router(self, role: RoleConfig) -> tuple[Any, str | None]:
        api_key = _api_key(role)
        with self._lock:
            router = self._routers.get(role.name)
            if router is None:
                fallback = self._config.role(role.fallback) if role.fallback else None
                router = self._routers[role.name] = _build_router(role, fallback, self._config)
                self._stats[role.name] = {redact_url(e): EndpointStats() for e in role.servers}
        return router, api_key

    def _note(self, role: RoleConfig, endpoint: str, ok: bool, error: str, started: float) -> None:
        endpoint = redact_url(endpoint)  # counted, stored and shown without its credentials
        latency = (time.perf_counter() - started) * 1000.0
        now = time.monotonic()
        with self._lock:
            stats = self._stats.setdefault(role.name, {}).setdefault(endpoint, EndpointStats())
            stats.calls += 1
            if ok:
                stats.last_ok_at = now
            else:
                stats.failures += 1
                stats.last_error = error
                stats.last_failure_at = now
        if self._on_attempt is not None:
            try:
                self._on_attempt(EndpointAttempt(role.name, endpoint, ok, error, latency))
            except Exception:  # accounting must never break a call
                log.exception("could not record the endpoint attempt of role %r", role.name)


def _api_key(role: RoleConfig) -> str | None:
    key = resolve_api_key(role)
    if key is None and (role.is_embedded or role.model.startswith("openai/")):
        key = _PLACEHOLDER_KEY  # the OpenAI client refuses to start without one
    return key


def _deployments(role: RoleConfig, group: str, config: LlmConfig) -> list[dict[str, Any]]:
    """The Router's deployments for ``role``: one per server, its id the server's address
    (which names it in responses, errors and our counts)."""
    model, servers = role.model, role.servers
    if role.is_embedded:  # only as a fallback, and only a running `workbench model serve`
        served = role.embedded_model
        assert served is not None
        model, servers = f"openai/{served.alias}", (attached_url_of(config, role),)
    api_key = _api_key(role)
    out = []
    for server in servers:
        params: dict[str, Any] = {"model": model, "timeout": role.timeout}
        if server.startswith(("http://", "https://")):
            params["api_base"] = server
        if api_key:
            params["api_key"] = api_key
        out.append({"model_name": group, "litellm_params": params, "model_info": {"id": server}})
    return out


def _build_router(role: RoleConfig, fallback: RoleConfig | None, config: LlmConfig) -> Any:
    import litellm
    from litellm import Router

    litellm.suppress_debug_info = True
    deployments = _deployments(role, role.name, config)
    fallbacks = []
    if fallback is not None:
        group = f"{role.name}:fallback:{fallback.name}"
        deployments += _deployments(fallback, group, config)
        fallbacks = [{role.name: [group]}]
    return Router(
        model_list=deployments,
        routing_strategy=role.routing,
        num_retries=0,  # the gateway retries, so every attempt is counted once
        fallbacks=fallbacks,
        allowed_fails=0,  # one failure is enough to route around a server for a while
        cooldown_time=role.cooldown,
        disable_cooldowns=role.cooldown == 0,
    )


def fleet_table(
    role: RoleConfig,
    stats: dict[str, EndpointStats],
    now: float,
    fallback: RoleConfig | None = None,
) -> list[dict[str, Any]]:
    """One row per server of ``role``, then of its ``fallback``, then any others that were
    logged (e.g. before the configuration changed): calls, share of the answered calls,
    failures, last failure kind and health. ``now`` is on the clock of ``stats``' times."""
    servers = [redact_url(e) for e in role.servers]  # as the counts name them
    configured = servers + ([redact_url(e) for e in fallback.servers] if fallback else [])
    endpoints = configured + sorted(e for e in stats if e not in configured)
    answered = {e: stats[e].calls - stats[e].failures if e in stats else 0 for e in endpoints}
    share = shares(answered)
    rows = []
    for e in endpoints:
        s = stats.get(e, EndpointStats())
        rows.append(
            {
                "role": role.name,
                "endpoint": e,
                "health": s.health(role.cooldown, now) if e in configured else "not configured",
                "fallback": e not in servers and e in configured,
                "calls": s.calls,
                "share": round(share[e], 3),
                "failures": s.failures,
                "last failure": s.last_error,
            }
        )
    return rows
