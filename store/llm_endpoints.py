"""What each endpoint of a model fleet did, in the workbench database.

``SqlEndpointLog`` is a gateway ``endpoint_sink``: one append-only row per HTTP attempt of
a fleet role (which endpoint the litellm Router chose, ok or the failure kind). Rows are
only ever inserted, so concurrent writers (CLI batch jobs, the UI) never conflict. The
Settings page reads :meth:`SqlEndpointLog.summary` for each endpoint's share and health.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Integer, cast, func
from sqlmodel import Session, select

from store.record_log import RecordLog, RoleRecordRow
from workbench.llm.fleet import EndpointStats


class LlmEndpointCallRow(RoleRecordRow, table=True):
    """One HTTP attempt of a fleet role at one endpoint."""

    __tablename__ = "llm_endpoint_calls"

    endpoint: str
    ok: bool = True
    error: str = ""
    latency_ms: float = 0.0


class SqlEndpointLog(RecordLog):
    """Writes one row per attempt; summarises them per role and endpoint."""

    row_type = LlmEndpointCallRow

    def summary(self) -> dict[str, dict[str, EndpointStats]]:
        """role -> endpoint -> counts, with ``last_ok_at``/``last_failure_at`` as POSIX
        seconds (pass ``now=time.time()`` to :meth:`EndpointStats.health`)."""
        c = LlmEndpointCallRow
        failed = ~c.ok
        with Session(self.engine) as session:
            rows = session.exec(
                select(
                    c.role,
                    c.endpoint,
                    func.count(),
                    func.sum(cast(failed, Integer)),
                    func.max(c.at).filter(c.ok),
                    func.max(c.at).filter(failed),
                ).group_by(c.role, c.endpoint)
            ).all()
            last_errors = {
                (role, endpoint): error
                for role, endpoint, error in session.exec(
                    select(c.role, c.endpoint, c.error)
                    .where(failed)
                    .where(c.id.in_(select(func.max(c.id)).where(failed).group_by(c.role, c.endpoint)))
                ).all()
            }
        out: dict[str, dict[str, EndpointStats]] = {}
        for role, endpoint, calls, failures, last_ok, last_failure in rows:
            out.setdefault(role, {})[endpoint] = EndpointStats(
                calls=int(calls),
                failures=int(failures or 0),
                last_error=last_errors.get((role, endpoint), ""),
                last_failure_at=_seconds(last_failure),
                last_ok_at=_seconds(last_ok),
            )
        return out


def _seconds(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        value = value.replace(tzinfo=UTC)
    return value.timestamp()
