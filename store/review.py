"""Review persistence: analysts' append-only decisions on audit verdicts. The stored traces
they are about come from the one trace repository, ``store.audit_repo`` (``run_traces``).

Decisions are only ever inserted: a changed mind is a newer record, and the newest per
(run, case, strategy, reviewer) is current (``workbench.review.current_decisions``). There
are deliberately no update or delete functions. Runs and cases are referenced by their plain
ids, not foreign keys, so the audit trail outlives re-imports. Each ``add_*`` call is one
short transaction; on SQLite (WAL, busy timeout, see ``store.db``) concurrent writers wait
for each other instead of losing records. Times are UTC and come back timezone-aware.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Index, Session, SQLModel, select

from store.session import insert_all, where_given
from workbench.review import ReviewDecision, utcnow, validate_decision


class ReviewDecisionRow(SQLModel, table=True):
    """One decision as made: who, when, on which verdict, confirm or overturn, and why."""

    __tablename__ = "review_decision"
    __table_args__ = (
        Index("ix_review_decision_item", "dataset", "run_id", "case_id", "strategy"),
    )

    id: int | None = Field(default=None, primary_key=True)
    dataset: str
    run_id: str
    case_id: str
    strategy: str
    reviewer: str = Field(index=True)
    decision: str
    note: str = ""
    judge_violation: bool | None = None
    created_at: datetime = Field(default_factory=utcnow)


def _aware(when: datetime) -> datetime:
    # SQLite keeps no offset; every stored time is UTC.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _decision(row: ReviewDecisionRow) -> ReviewDecision:
    return ReviewDecision(
        dataset=row.dataset, run_id=row.run_id, case_id=row.case_id, strategy=row.strategy,
        reviewer=row.reviewer, decision=row.decision, note=row.note,
        judge_violation=row.judge_violation, created_at=_aware(row.created_at),
    )


def add_decision(engine: Engine, decision: ReviewDecision) -> int:
    """Validate and append one decision; returns its record id. Raises ``ReviewError``."""
    return add_decisions(engine, [decision])[0]


def add_decisions(engine: Engine, decisions: Iterable[ReviewDecision]) -> list[int]:
    """Validate every decision, then append them all in one transaction (all or none)."""
    return insert_all(engine, [
        ReviewDecisionRow(
            dataset=d.dataset, run_id=d.run_id, case_id=d.case_id, strategy=d.strategy,
            reviewer=d.reviewer.strip(), decision=d.decision, note=d.note,
            judge_violation=d.judge_violation, created_at=d.created_at.astimezone(UTC),
        )
        for d in map(validate_decision, decisions)
    ])


def decisions_for(
    engine: Engine,
    dataset: str | None = None,
    *,
    run_id: str | None = None,
    case_id: str | None = None,
    reviewer: str | None = None,
) -> list[ReviewDecision]:
    """Every decision record matching the filters, oldest first."""
    query = where_given(select(ReviewDecisionRow), (ReviewDecisionRow.dataset, dataset),
                        (ReviewDecisionRow.run_id, run_id), (ReviewDecisionRow.case_id, case_id),
                        (ReviewDecisionRow.reviewer, reviewer))
    with Session(engine) as session:
        return [_decision(row) for row in session.exec(query.order_by(ReviewDecisionRow.id))]
