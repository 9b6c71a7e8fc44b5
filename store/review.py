"""Review persistence: analysts' append-only decisions on audit verdicts (their saved views of
the queue are ``store.review_views``). The stored traces the decisions are about come from the one trace
repository, ``store.audit_repo`` (``run_traces``).

Decisions are only ever inserted: a changed mind is a newer record, and the newest per
(run, case, strategy, reviewer) is current (``workbench.review.queue.current_decisions``); an undo
is a record too (``undo_last``), withdrawing the reviewer's last action. There are
deliberately no update or delete functions for decisions. Writes take the acting
``workbench.identity.roles.Actor`` ("decide reviews"): a page passes ``identity.actor(name)``, the
command line the identity ``cli_actor`` gives (``actor`` has no default); a signed-in actor records
decisions under their own name only. Runs and cases are referenced by their plain
ids, not foreign keys, so the audit trail outlives re-imports. Each ``add_*`` call is one
short transaction; on SQLite (WAL, busy timeout, see ``store.db``) concurrent writers wait
for each other instead of losing records. Times are UTC and come back timezone-aware.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Index, Session, SQLModel, select

from store.session import insert_all, retry_conflicts, where_given, write_session
from workbench.clock import utcnow
from workbench.identity.roles import SINGLE_USER, Actor, NotAllowed, require
from workbench.review.decisions import (
    ReviewDecision,
    StaleUndo,
    last_action,
    undo_records,
    validate_decision,
)


class ReviewDecisionRow(SQLModel, table=True):
    """One decision as made: who, when, on which verdict, confirm, overturn or wrong rule
    (or an undo of an earlier record, ``undoes``), and why. ``batch``: the action it was
    part of (a bulk decision), which an undo takes back whole."""

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
    batch: str = Field(default="", index=True)
    undoes: int | None = None
    # What the analyst saw and what they say (migration 0008): the decided label shown on the
    # card ("violation" / "compliant" / "review"), where its score came from ("judge" /
    # "activations"), the decision setting's version, and the analyst's own label.
    shown: str | None = None
    shown_source: str | None = None
    setting_version: int | None = None
    analyst_label: str | None = None


def _aware(when: datetime) -> datetime:
    # SQLite keeps no offset; every stored time is UTC.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _decision(row: ReviewDecisionRow) -> ReviewDecision:
    return ReviewDecision(
        dataset=row.dataset, run_id=row.run_id, case_id=row.case_id, strategy=row.strategy,
        reviewer=row.reviewer, decision=row.decision, note=row.note,
        judge_violation=row.judge_violation, created_at=_aware(row.created_at), id=row.id,
        batch=row.batch, undoes=row.undoes, shown=row.shown, shown_source=row.shown_source,
        setting_version=row.setting_version, analyst_label=row.analyst_label,
    )


def _check_actor(actor: Actor, decisions: list[ReviewDecision]) -> None:
    """The role check of every decision write: the actor may decide reviews, and a
    signed-in actor decides under their own name (a typed name is single-user mode only)."""
    require(actor, "decide reviews")
    if actor.role == SINGLE_USER:
        return
    others = sorted({d.reviewer.strip() for d in decisions} - {actor.name})
    if others:
        raise NotAllowed(f"{actor.name} is signed in and cannot record decisions as "
                         f"{', '.join(others)}; nothing was saved",
                         "decide under your own name, or sign in as that person")


def _row(d: ReviewDecision, batch: str) -> ReviewDecisionRow:
    return ReviewDecisionRow(
        dataset=d.dataset, run_id=d.run_id, case_id=d.case_id, strategy=d.strategy,
        reviewer=d.reviewer.strip(), decision=d.decision, note=d.note,
        judge_violation=d.judge_violation, created_at=d.created_at.astimezone(UTC),
        batch=d.batch or batch, undoes=d.undoes, shown=d.shown, shown_source=d.shown_source,
        setting_version=d.setting_version, analyst_label=d.analyst_label,
    )


def add_decision(engine: Engine, decision: ReviewDecision, *, actor: Actor) -> int:
    """Validate and append one decision; returns its record id. Raises ``ReviewError``, or
    ``roles.NotAllowed`` (nothing written) when ``actor`` may not decide reviews."""
    return add_decisions(engine, [decision], actor=actor)[0]


def add_decisions(engine: Engine, decisions: Iterable[ReviewDecision], *,
                  actor: Actor) -> list[int]:
    """Validate every decision, then append them all in one transaction (all or none), as
    one action: they share a batch id (unless they carry one), so one undo takes them all
    back. Raises ``ReviewError`` / ``roles.NotAllowed`` with nothing written."""
    require(actor, "decide reviews")  # the role first: a refusal says so, not a field error
    chosen = [validate_decision(d) for d in decisions]
    _check_actor(actor, chosen)
    if not chosen:
        return []
    batch = uuid.uuid4().hex[:16] if len(chosen) > 1 else ""
    return insert_all(engine, [_row(d, batch) for d in chosen])


def undo_last(engine: Engine, dataset: str, reviewer: str, *, actor: Actor,
              expected: tuple[int, ...] | None = None, note: str = "") -> list[ReviewDecision]:
    """Withdraw ``reviewer``'s last action in ``dataset`` (one decision, or every decision
    of a bulk one) by appending undo records; returns the decisions withdrawn (empty: there
    was nothing to undo). ``expected``: the record ids the caller showed as "the last
    decision"; when the last action is another by now (a second press, another tab), raises
    :class:`StaleUndo` and undoes nothing, so a double click never takes back two actions.
    Read and write hold the write lock together (``write_session``)."""
    reviewer = reviewer.strip()
    require(actor, "decide reviews")
    if actor.role != SINGLE_USER and reviewer != actor.name:
        raise NotAllowed(f"{actor.name} is signed in and cannot undo the decisions of "
                         f"{reviewer}; nothing was undone", "undo your own decisions only")

    def write() -> list[ReviewDecision]:
        with write_session(engine) as session:
            rows = session.exec(select(ReviewDecisionRow)
                                .where(ReviewDecisionRow.dataset == dataset,
                                       ReviewDecisionRow.reviewer == reviewer)
                                .order_by(ReviewDecisionRow.id)).all()
            action = last_action([_decision(r) for r in rows], reviewer, dataset)
            ids = tuple(sorted(d.id for d in action if d.id is not None))
            if expected is not None and ids != tuple(sorted(expected)):
                raise StaleUndo(
                    "your last decision is no longer the one shown (it was undone already, "
                    "or a newer one was made in another tab); nothing was undone",
                    "look at the decisions listed under the verdict and undo again if needed")
            if not action:
                return []
            session.add_all([_row(d, "") for d in map(validate_decision, undo_records(action, note))])
            session.commit()
            return action

    return retry_conflicts(write)


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


def last_decision(engine: Engine, dataset: str, reviewer: str) -> list[ReviewDecision]:
    """What :func:`undo_last` would take back now (for the page's Undo button)."""
    return last_action(decisions_for(engine, dataset, reviewer=reviewer.strip()),
                       reviewer.strip(), dataset)


def decision_version(engine: Engine, dataset: str) -> tuple[int, int]:
    """(records, newest id) of ``dataset``'s decisions: decisions are only ever added, so the
    pair identifies their state (a key for the decided records built from them)."""
    from sqlalchemy import func

    with Session(engine) as session:
        n, newest = session.exec(select(func.count(), func.max(ReviewDecisionRow.id))
                                 .where(ReviewDecisionRow.dataset == dataset)).one()
    return int(n or 0), int(newest or 0)
