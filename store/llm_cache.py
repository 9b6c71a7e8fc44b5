"""Model responses and usage in the workbench database.

``SqlResponseCache`` implements ``workbench.llm.ResponseCache``: accepted answers keyed by
the sha256 of the whole request, so a re-run of the same step costs nothing and gives the
same answer. ``SqlUsageLog`` is a gateway ``usage_sink``: one row per call (cache hits
included), for token and latency totals. Neither ever holds an API key: the keyed request
has no key in it, by construction of the gateway.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import Integer, case, cast, delete, func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, select

from store.record_log import RecordLog, RoleRecordRow
from workbench.clock import utcnow
from workbench.llm import CachedResponse, Gateway, LlmConfig, UsageTotals
from workbench.llm.logprobs import compact_logprobs


class LlmCacheEntry(SQLModel, table=True):
    """One accepted model answer for one exact request."""

    __tablename__ = "llm_cache"

    key: str = Field(primary_key=True, max_length=64)
    model: str = Field(index=True)
    role: str = ""
    request_json: str
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # The answer's token log-probabilities (workbench.llm.logprobs form) when the request
    # asked for them: a verdict's probability is read from them again on a cache hit.
    logprobs_json: str | None = None


class LlmUsageRow(RoleRecordRow, table=True):
    """One gateway call as accounted (see ``workbench.llm.Usage``)."""

    __tablename__ = "llm_usage"

    model: str
    step: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None
    cached: bool = False
    attempts: int = 1
    error: str = ""


# CachedResponse fields stored as they are (the request is stored as canonical JSON).
_CACHED_FIELDS = (
    "key", "model", "role", "text", "prompt_tokens", "completion_tokens", "latency_ms", "cost_usd"
)


class SqlResponseCache:
    """The persistent ResponseCache. Thread-safe (one short session per operation)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> CachedResponse | None:
        with Session(self.engine) as session:
            row = session.get(LlmCacheEntry, key)
            if row is None:
                return None
            return CachedResponse(
                request=json.loads(row.request_json),
                logprobs=compact_logprobs(json.loads(row.logprobs_json)) if row.logprobs_json else None,
                **{f: getattr(row, f) for f in _CACHED_FIELDS},
            )

    def put(self, entry: CachedResponse) -> None:
        row = LlmCacheEntry(
            request_json=json.dumps(entry.request, ensure_ascii=False, sort_keys=True),
            logprobs_json=None if entry.logprobs is None
            else json.dumps(entry.logprobs, ensure_ascii=False, separators=(",", ":")),
            **{f: getattr(entry, f) for f in _CACHED_FIELDS},
        )
        with Session(self.engine) as session:
            session.merge(row)
            try:
                session.commit()
            except IntegrityError:
                # Another writer stored the same request first; its answer is as good.
                session.rollback()

    def stats(self) -> dict[str, float]:
        """Entries and the tokens/latency it took to obtain them live."""
        with Session(self.engine) as session:
            entries, prompt, completion, latency = session.exec(
                select(
                    func.count(),
                    func.coalesce(func.sum(LlmCacheEntry.prompt_tokens), 0),
                    func.coalesce(func.sum(LlmCacheEntry.completion_tokens), 0),
                    func.coalesce(func.sum(LlmCacheEntry.latency_ms), 0.0),
                )
            ).one()
        return {
            "entries": int(entries),
            "prompt_tokens": int(prompt),
            "completion_tokens": int(completion),
            "latency_ms": float(latency),
        }

    def clear(self) -> int:
        with Session(self.engine) as session:
            removed = session.execute(delete(LlmCacheEntry)).rowcount
            session.commit()
            return removed


class SqlUsageLog(RecordLog):
    """A gateway ``usage_sink`` writing one LlmUsageRow per call, and its totals."""

    row_type = LlmUsageRow

    def totals_by_role(self) -> dict[str, UsageTotals]:
        """Per-role totals over every recorded call (``live_*`` leave out cache hits)."""
        c = LlmUsageRow
        live = ~c.cached
        with Session(self.engine) as session:
            rows = session.exec(
                select(
                    c.role,
                    func.count(),
                    func.sum(cast(c.cached, Integer)),
                    func.sum(c.prompt_tokens),
                    func.sum(c.completion_tokens),
                    func.sum(_case(live, c.prompt_tokens)),
                    func.sum(_case(live, c.completion_tokens)),
                    func.sum(c.latency_ms),
                    func.sum(func.coalesce(c.cost_usd, 0.0)),
                    func.sum(_case(live & c.cost_usd.is_(None), 1)),
                ).group_by(c.role)
            ).all()
        return {
            role: UsageTotals(
                calls=int(n),
                cached_calls=int(cached or 0),
                prompt_tokens=int(p or 0),
                completion_tokens=int(q or 0),
                live_prompt_tokens=int(lp or 0),
                live_completion_tokens=int(lq or 0),
                latency_ms=float(lat or 0.0),
                cost_usd=float(cost or 0.0),
                unpriced_calls=int(unpriced or 0),
            )
            for role, n, cached, p, q, lp, lq, lat, cost, unpriced in rows
        }


def _case(condition, value):
    return case((condition, value), else_=0)


def persistent_gateway(engine: Engine, config: LlmConfig | None = None) -> Gateway:
    """A gateway whose cache, usage log and fleet endpoint log live in the workbench database;
    the ``WORKBENCH_LLM_MODE`` recording/replay mode applies too."""
    from store.llm_endpoints import SqlEndpointLog

    return Gateway.from_env(config, SqlResponseCache(engine), usage_sink=SqlUsageLog(engine),
                            endpoint_sink=SqlEndpointLog(engine))
