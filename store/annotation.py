"""Annotation persistence: append-only labels and adjudications, annotators, task queues.

Records are only ever inserted; a changed mind is a newer record (see
``workbench.annotation.current_labels``). There are deliberately no update or delete
functions. References to SKILLs, rules and cases are plain strings (``skill_name``,
``skill_version``, ``item_key``) rather than foreign keys, so annotation history survives
however those tables evolve.

Every writer validates with the core (``workbench.annotation``) first and raises its
``LabelError`` for invalid records. Labels and adjudications take the acting
``workbench.identity.roles.Actor`` ("label", "adjudicate"): the Annotate page and ``workbench
annotate label`` pass the signed-in person, who records under their own name only. Each
``add_*`` call is one short transaction: on SQLite (WAL, busy timeout, see ``store.db``)
concurrent writers in threads or processes wait for each other instead of losing records.
Times are stored as UTC instants (sqlmodel's timezone-aware column type) and come back
timezone-aware in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, fields
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Index, Session, SQLModel, UniqueConstraint, select

from store.session import insert_all, retry_conflicts, where_given, write_session
from workbench.annotation.labels import (
    TASK_TYPES,
    Adjudication,
    Annotator,
    Label,
    LabelError,
    task_type,
    utcnow,
    validate_adjudication,
    validate_annotator,
    validate_label,
)
from workbench.identity.roles import SINGLE_USER, Actor, NotAllowed, require


class _ItemRecordRow(SQLModel):
    """The columns a label and an adjudication share: a value given to one item of a task."""

    id: int | None = Field(default=None, primary_key=True)
    task: str
    item_key: str
    value: str
    error_type: str | None = None
    note: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class AnnotationLabel(_ItemRecordRow, table=True):
    """One label as given: who, when, what, and whether a human or a model gave it."""

    __tablename__ = "annotation_label"
    __table_args__ = (Index("ix_annotation_label_task_item", "task", "item_key"),)

    annotator: str = Field(index=True)
    source: str = "human"


class AnnotationAdjudication(_ItemRecordRow, table=True):
    """A reviewer's final decision on one item; the newest per item wins."""

    __tablename__ = "annotation_adjudication"
    __table_args__ = (Index("ix_annotation_adjudication_task_item", "task", "item_key"),)

    reviewer: str


class AnnotationAnnotator(SQLModel, table=True):
    """A named annotator and their role. Sign-in by name for now; an auth id can join later."""

    __tablename__ = "annotation_annotator"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    role: str = "annotator"
    created_at: datetime = Field(default_factory=utcnow)


class AnnotationTaskItem(SQLModel, table=True):
    """One item in the queue of a task for one SKILL version."""

    __tablename__ = "annotation_task_item"
    __table_args__ = (
        UniqueConstraint("task", "skill_name", "skill_version", "item_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    task: str
    skill_name: str = Field(index=True)
    skill_version: int
    item_key: str
    position: int = 0
    created_at: datetime = Field(default_factory=utcnow)


# Label and Adjudication records are stored field for field; only ``item`` is named
# ``item_key`` in the tables. SQLModel ignores unknown keywords, so a test pins the columns
# to the record fields (tests/test_annotation_store.py).
def _row_fields(record: Label | Adjudication) -> dict:
    stored = asdict(record)
    stored["item_key"] = stored.pop("item")
    return stored


def _record_fields(row: AnnotationLabel | AnnotationAdjudication, record_type: type) -> dict:
    return {f.name: getattr(row, "item_key" if f.name == "item" else f.name) for f in fields(record_type)}


def _check_actor(actor: Actor, action: str, names: set[str]) -> None:
    """The role check of a label write: ``actor`` may ``action``, and a signed-in actor
    records under their own name (blind labels are per person)."""
    require(actor, action)
    others = sorted(names - {actor.name})
    if actor.role != SINGLE_USER and others:
        raise NotAllowed(f"{actor.name} is signed in and cannot record labels as "
                         f"{', '.join(others)}; nothing was saved",
                         "label under your own name, or sign in as that person")


def add_label(engine: Engine, label: Label, *, actor: Actor) -> int:
    """Validate and append one label; returns its record id."""
    return add_labels(engine, [label], actor=actor)[0]


def add_labels(engine: Engine, labels: Iterable[Label], *, actor: Actor) -> list[int]:
    """Validate every label, then append them all in one transaction (all or none). Raises
    ``LabelError``, or ``roles.NotAllowed`` (nothing written) when ``actor`` may not label."""
    chosen = [validate_label(lab) for lab in labels]
    _check_actor(actor, "label", {lab.annotator for lab in chosen if lab.source == "human"})
    return insert_all(engine, [AnnotationLabel(**_row_fields(lab)) for lab in chosen])


def labels_for(engine: Engine, task: str, item_key: str | None = None, *,
               annotator: str | None = None) -> list[Label]:
    """Every label record of ``task`` (optionally one item, one annotator), oldest first."""
    task_type(task)
    query = where_given(select(AnnotationLabel), (AnnotationLabel.task, task),
                        (AnnotationLabel.item_key, item_key), (AnnotationLabel.annotator, annotator))
    with Session(engine) as session:
        return [Label(**_record_fields(row, Label))
                for row in session.exec(query.order_by(AnnotationLabel.id))]


def add_annotator(engine: Engine, name: str, role: str = "annotator") -> Annotator:
    """Register an annotator (idempotent for the same name and role).

    Raises ``LabelError`` if the name is taken with another role: roles are not changed here.
    """
    wanted = validate_annotator(Annotator(name, role))
    existing = get_annotator(engine, name)
    if existing is None:
        try:
            with Session(engine) as session:
                session.add(AnnotationAnnotator(name=name, role=role))
                session.commit()
            return wanted
        except IntegrityError:  # registered concurrently; fall through to the check
            existing = get_annotator(engine, name)
    if existing is not None and existing.role != role:
        raise LabelError(
            f"annotator {name!r} is already registered as {existing.role!r}; "
            "pick another name or ask an administrator to change the role"
        )
    return wanted


def get_annotator(engine: Engine, name: str) -> Annotator | None:
    with Session(engine) as session:
        row = session.exec(
            select(AnnotationAnnotator).where(AnnotationAnnotator.name == name)
        ).first()
        return Annotator(row.name, row.role) if row else None


def annotators(engine: Engine) -> list[Annotator]:
    """Every registered annotator, in registration order."""
    with Session(engine) as session:
        rows = session.exec(select(AnnotationAnnotator).order_by(AnnotationAnnotator.id))
        return [Annotator(row.name, row.role) for row in rows]


def add_adjudication(engine: Engine, adjudication: Adjudication, *, actor: Actor) -> int:
    """Validate and append a reviewer's decision; returns its record id.

    The reviewer must be registered with role ``reviewer`` (``add_annotator``), else
    ``LabelError``; ``actor`` must be allowed to adjudicate (``roles.NotAllowed``).
    """
    _check_actor(actor, "adjudicate", {adjudication.reviewer})
    reviewer = get_annotator(engine, adjudication.reviewer)
    if reviewer is None:
        raise LabelError(
            f"{adjudication.reviewer!r} is not a registered annotator; register them with "
            "add_annotator(engine, name, role='reviewer') first"
        )
    validate_adjudication(adjudication, reviewer)
    return insert_all(engine, [AnnotationAdjudication(**_row_fields(adjudication))])[0]


def adjudications_for(engine: Engine, task: str, item_key: str | None = None) -> list[Adjudication]:
    """Every adjudication record of ``task`` (optionally one item), oldest first."""
    task_type(task)
    query = where_given(select(AnnotationAdjudication), (AnnotationAdjudication.task, task),
                        (AnnotationAdjudication.item_key, item_key))
    with Session(engine) as session:
        return [Adjudication(**_record_fields(row, Adjudication))
                for row in session.exec(query.order_by(AnnotationAdjudication.id))]


def all_records(engine: Engine) -> tuple[list[Label], list[Adjudication]]:
    """Every label and adjudication of every task, oldest first within a task."""
    return ([lab for task in TASK_TYPES for lab in labels_for(engine, task)],
            [adj for task in TASK_TYPES for adj in adjudications_for(engine, task)])


def add_task_items(engine: Engine, task: str, skill_name: str, skill_version: int,
                   item_keys: Iterable[str]) -> int:
    """Queue items of ``task`` for one SKILL version, keeping their order; items already
    queued are skipped. Returns how many were added."""
    task_type(task)
    keys = list(dict.fromkeys(item_keys))
    if any(not isinstance(k, str) or not k.strip() for k in keys):
        raise LabelError("item keys must be non-empty strings")

    def write() -> int:
        # Under the write lock: a concurrent enqueue cannot slip between the read and the insert.
        with write_session(engine) as session:
            queued = set(_queued(session, task, skill_name, skill_version))
            start = len(queued)
            new = [k for k in keys if k not in queued]
            session.add_all(
                AnnotationTaskItem(task=task, skill_name=skill_name,
                                   skill_version=skill_version, item_key=k,
                                   position=start + offset)
                for offset, k in enumerate(new)
            )
            session.commit()
            return len(new)

    return retry_conflicts(write)


def _queued(session: Session, task: str, skill_name: str, skill_version: int) -> list[str]:
    rows = session.exec(
        select(AnnotationTaskItem)
        .where(AnnotationTaskItem.task == task)
        .where(AnnotationTaskItem.skill_name == skill_name)
        .where(AnnotationTaskItem.skill_version == skill_version)
        .order_by(AnnotationTaskItem.position, AnnotationTaskItem.id)
    )
    return [row.item_key for row in rows]


def task_items(engine: Engine, task: str, skill_name: str, skill_version: int) -> list[str]:
    """The queue of ``task`` for one SKILL version, in queue order."""
    task_type(task)
    with Session(engine) as session:
        return _queued(session, task, skill_name, skill_version)
