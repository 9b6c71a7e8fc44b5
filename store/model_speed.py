"""Measured model speed on this machine, for the estimates pages show before a model call
(``workbench.llm.speed``).

Generation speed comes from the usage records the gateway already writes for every call
(``store.llm_cache.LlmUsageRow``: live, successful calls only; cache hits cost no model
time). Model start-ups are timed by the page that starts the embedded model and appended
here (``ModelStartupRow``), so "starting the model" gets an estimate of its own.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from store.llm_cache import LlmUsageRow
from workbench.clock import utcnow
from workbench.llm.speed import Speed, fit_speed, startup_estimate

# The most recent calls per model that a speed is fitted on: recent enough to follow a
# busier machine, many enough to be steady.
RECENT_CALLS = 200
RECENT_STARTUPS = 5


class ModelStartupRow(SQLModel, table=True):
    """One timed start-up of a model server in this process (seconds until it answered)."""

    __tablename__ = "model_startup"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    model: str = Field(index=True)
    seconds: float


def record_startup(engine: Engine, model: str, seconds: float) -> None:
    """Append one timed start-up (append-only: concurrent writers never conflict)."""
    with Session(engine) as session:
        session.add(ModelStartupRow(model=model, seconds=float(seconds)))
        session.commit()


def startup_seconds(engine: Engine, model: str) -> float | None:
    """The typical start-up of ``model`` here (median of the last few), or None."""
    with Session(engine) as session:
        rows = session.exec(select(ModelStartupRow.seconds).where(ModelStartupRow.model == model)
                            .order_by(ModelStartupRow.id.desc()).limit(RECENT_STARTUPS)).all()
    return startup_estimate([float(s) for s in rows])


def measured_speed(engine: Engine, model: str, role: str | None = None) -> Speed | None:
    """The speed of ``model`` from its last :data:`RECENT_CALLS` live successful calls (of
    ``role`` only, when given: a judge answers in fewer tokens than an extractor, which
    the typical completion length reflects), or None with too few calls."""
    c = LlmUsageRow
    stmt = (select(c.prompt_tokens, c.completion_tokens, c.latency_ms)
            .where(c.model == model, c.cached == False, c.error == "", c.latency_ms > 0)  # noqa: E712
            .order_by(c.id.desc()).limit(RECENT_CALLS))
    if role is not None:
        stmt = stmt.where(c.role == role)
    with Session(engine) as session:
        rows = session.exec(stmt).all()
    return fit_speed(model, [(p, q, ms / 1000.0) for p, q, ms in rows])
