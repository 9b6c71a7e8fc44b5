"""The embedded model's start-up as a step of its own, for any page that calls a model
(Replay's re-run now; the Skills page's extraction can call the same), and estimates from
this machine's measured speed (``store.model_speed``). Page-private: it writes the timed
start-ups into the store.

Usage (a page about to call ``roles``)::

    start_model_if_needed(eng, gateway.config, [ModelRole.EXTRACTOR, ModelRole.FUSER])  # own bar
    seconds, words = calls_estimate(eng, gateway.config, ModelRole.EXTRACTOR, [900, 1200, 700])
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy.engine import Engine

from components.model_run import Step, run_steps
from store import model_speed
from workbench.llm import LlmConfig
from workbench.llm.embedded import current_embedded_server, ensure_embedded_server
from workbench.llm.speed import describe_duration
from workbench.llm.transport import key_model
from workbench.settings import LLM_MODE

MEASURED = "measured on this machine"


def needs_startup(config: LlmConfig, roles: Sequence[str]) -> bool:
    """Whether a call of ``roles`` first starts the embedded model in this process (it is
    not running, no `workbench model serve` is attached, and calls are live)."""
    if (LLM_MODE.read() or "live").strip().lower() == "replay":
        return False
    embedded = [r for r in roles if config.role(r).is_embedded]
    return bool(embedded) and not config.embedded.attached_url and current_embedded_server() is None


def startup_estimate(eng: Engine, config: LlmConfig, roles: Sequence[str]) -> float | None:
    return model_speed.startup_seconds(eng, key_model(config.role(roles[0]))) if roles else None


def _start(eng: Engine, config: LlmConfig, role: str) -> None:
    t0 = time.perf_counter()
    server = ensure_embedded_server(config.embedded)
    if server.info is not None:  # timed for the next estimate
        model_speed.record_startup(eng, key_model(config.role(role)), time.perf_counter() - t0)


def startup_steps(eng: Engine, config: LlmConfig, roles: Sequence[str]) -> list[Step]:
    """The start-up step a job of ``roles`` needs first (none when the model runs)."""
    if not needs_startup(config, roles):
        return []
    about = startup_estimate(eng, config, roles)
    return [Step("Starting the model", lambda: _start(eng, config, roles[0]), about,
                 source=MEASURED if about else "")]


def start_model_if_needed(eng: Engine, config: LlmConfig, roles: Sequence[str]) -> None:
    """Start the embedded model under a bar of its own when ``roles`` need it."""
    for step in startup_steps(eng, config, roles):
        run_steps([], step)


def calls_estimate(eng: Engine, config: LlmConfig, role: str,
                   prompt_tokens: Sequence[int]) -> tuple[float | None, str]:
    """Seconds of one call of ``role`` per prompt size, from measured speed, and the words
    saying so (``None`` and "not measured yet" before the model answered here)."""
    speed = model_speed.measured_speed(eng, key_model(config.role(role)), role)
    if speed is None:
        return None, f"no {role} speed measured on this machine yet"
    seconds = sum(speed.call_seconds(p) for p in prompt_tokens)
    return seconds, f"{describe_duration(seconds)} ({MEASURED}: {speed.describe()})"
