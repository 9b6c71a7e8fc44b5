"""Connection check: one tiny structured request through a role, reported as a dict."""

from __future__ import annotations

import time
from typing import Any

from workbench.llm.errors import (
    EmbeddedModelUnavailable,
    LlmConfigError,
    MissingRecording,
    ModelCallError,
)
from workbench.llm.gateway import Gateway
from workbench.llm.redact import redact_text, redact_url

CHECK_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
CHECK_MESSAGES = [
    {"role": "system", "content": "You answer with JSON only."},
    {"role": "user", "content": 'Reply with {"ok": true}.'},
]
CHECK_MAX_TOKENS = 16


def check_role(gateway: Gateway, role: str) -> dict[str, Any]:
    """Send one small JSON request for ``role`` without cache or retries.

    Returns ``{role, model, ok, latency_ms, prompt_tokens, completion_tokens}``, plus
    ``endpoint`` and, when it failed, ``error`` (what happened and what to check). Never
    raises for a failed model call; the role's timeout bounds how long a dead endpoint takes.
    """
    if gateway.mode == "live":
        import litellm  # noqa: F401  (import once, outside the measured latency)

    started = time.perf_counter()
    try:
        cfg = gateway.config.role(role)
    except LlmConfigError as exc:
        return failed_result(role, "", "", str(exc), started)
    # No retries: a check answers "does this work now", within one timeout.
    probe = {"retries": 0, "max_tokens": CHECK_MAX_TOKENS}
    checker = gateway.with_config(gateway.config.with_role(role, **probe))
    try:
        result = checker.complete_json(
            role,
            CHECK_MESSAGES,
            CHECK_SCHEMA,
            schema_name="check",
            step="model-check",
            use_cache=False,
        )
    except (ModelCallError, EmbeddedModelUnavailable, MissingRecording) as exc:
        return failed_result(role, cfg.model, checker.endpoint(role), str(exc), started)
    return {
        "role": role,
        "model": cfg.model,
        "ok": True,
        "latency_ms": round(result.usage.latency_ms, 1),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "endpoint": redact_url(checker.endpoint(role)),
    }


def failed_result(role: str, model: str, endpoint: str, error: str,
                  started: float | None = None) -> dict[str, Any]:
    """A failed check's dict; ``started`` is the ``perf_counter()`` the check began at (latency
    0 for a role that was never asked, e.g. when the embedded server could not start)."""
    return {
        "role": role,
        "model": model,
        "ok": False,
        "latency_ms": 0.0 if started is None else round((time.perf_counter() - started) * 1000.0, 1),
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "endpoint": redact_url(endpoint),
        "error": redact_text(error),
    }
