"""Annotation persistence: append-only records, annotators, queues, concurrent writers."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest

import store.annotation as annotation_store
from store.annotation import (
    add_adjudication,
    add_annotator,
    add_label,
    add_labels,
    add_task_items,
    adjudications_for,
    annotators,
    get_annotator,
    labels_for,
    task_items,
)
from store.db import make_engine
from workbench.annotation import (
    CDG_INSPECTION,
    RULE_CORRECTNESS,
    Adjudication,
    Label,
    LabelError,
    inspection_item,
    resolve,
)
from workbench.identity.roles import COMMAND_LINE


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'annotation.db'}"


@pytest.fixture
def engine(db_url):
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def test_labels_round_trip_in_append_order(engine):
    created = datetime(2025, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    first = Label("R1", RULE_CORRECTNESS, "ann", "incorrect", "wrong_action", "acts on the wrong "
                  "party", created_at=created)
    second = Label("R1", RULE_CORRECTNESS, "judge", "correct", source="model")
    ids = [add_label(engine, first, actor=COMMAND_LINE), add_label(engine, second, actor=COMMAND_LINE)]
    assert ids[0] < ids[1]
    stored = labels_for(engine, RULE_CORRECTNESS, "R1")
    # The time comes back as the same instant, in UTC.
    assert stored[0] == Label("R1", RULE_CORRECTNESS, "ann", "incorrect", "wrong_action",
                              "acts on the wrong party", created.astimezone(UTC), "human")
    assert stored[0].created_at.tzinfo is not None
    assert (stored[1].annotator, stored[1].source) == ("judge", "model")


def test_relabel_appends_instead_of_overwriting(engine):
    add_label(engine, Label("R1", RULE_CORRECTNESS, "ann", "correct",
                            created_at=datetime(2025, 1, 1, tzinfo=UTC)), actor=COMMAND_LINE)
    add_label(engine, Label("R1", RULE_CORRECTNESS, "ann", "incorrect", "duplicate",
                            created_at=datetime(2025, 1, 2, tzinfo=UTC)), actor=COMMAND_LINE)
    add_label(engine, Label("R1", RULE_CORRECTNESS, "bob", "incorrect", "duplicate"), actor=COMMAND_LINE)
    history = labels_for(engine, RULE_CORRECTNESS, "R1", annotator="ann")
    assert [lab.value for lab in history] == ["correct", "incorrect"]
    # The latest label per annotator decides.
    assert resolve(labels_for(engine, RULE_CORRECTNESS))["R1"].value == "incorrect"


def test_store_is_append_only():
    public = [name for name in dir(annotation_store) if not name.startswith("_")]
    assert not [name for name in public if name.startswith(("update", "delete", "remove"))]


def test_filters_by_task_and_item(engine):
    add_labels(engine, [
        Label("R1", RULE_CORRECTNESS, "ann", "correct"),
        Label("R2", RULE_CORRECTNESS, "ann", "correct"),
        Label(inspection_item("case-1", "skill_governs"), CDG_INSPECTION, "ann", "pass"),
    ], actor=COMMAND_LINE)
    assert [lab.item for lab in labels_for(engine, RULE_CORRECTNESS)] == ["R1", "R2"]
    assert [lab.item for lab in labels_for(engine, RULE_CORRECTNESS, "R2")] == ["R2"]
    assert len(labels_for(engine, CDG_INSPECTION)) == 1
    with pytest.raises(LabelError, match="unknown task"):
        labels_for(engine, "rules")


def test_invalid_labels_are_rejected_and_batches_are_all_or_nothing(engine):
    with pytest.raises(LabelError, match="needs an error type"):
        add_label(engine, Label("R1", RULE_CORRECTNESS, "ann", "incorrect"), actor=COMMAND_LINE)
    with pytest.raises(LabelError, match="not allowed"):
        add_labels(engine, [Label("R1", RULE_CORRECTNESS, "ann", "correct"),
                            Label("R2", RULE_CORRECTNESS, "ann", "maybe")], actor=COMMAND_LINE)
    assert labels_for(engine, RULE_CORRECTNESS) == []


def test_annotators_and_roles(engine):
    assert add_annotator(engine, "ann").role == "annotator"
    add_annotator(engine, "rita", role="reviewer")
    add_annotator(engine, "ann")  # idempotent
    assert [a.name for a in annotators(engine)] == ["ann", "rita"]
    assert get_annotator(engine, "rita").is_reviewer
    assert get_annotator(engine, "nobody") is None
    with pytest.raises(LabelError, match="already registered as 'annotator'"):
        add_annotator(engine, "ann", role="reviewer")
    with pytest.raises(LabelError, match="role 'boss' is unknown"):
        add_annotator(engine, "zed", role="boss")


def test_adjudications_need_a_registered_reviewer(engine):
    add_annotator(engine, "ann")
    add_annotator(engine, "rita", role="reviewer")
    decision = Adjudication("R1", RULE_CORRECTNESS, "rita", "incorrect", "hallucinated",
                            "no such clause in the SKILL")
    add_adjudication(engine, decision, actor=COMMAND_LINE)
    stored = adjudications_for(engine, RULE_CORRECTNESS, "R1")
    assert [(a.reviewer, a.value, a.error_type, a.note) for a in stored] == [
        ("rita", "incorrect", "hallucinated", "no such clause in the SKILL")]
    with pytest.raises(LabelError, match="only a reviewer may adjudicate"):
        add_adjudication(engine, Adjudication("R1", RULE_CORRECTNESS, "ann", "correct"), actor=COMMAND_LINE)
    with pytest.raises(LabelError, match="not a registered annotator"):
        add_adjudication(engine, Adjudication("R1", RULE_CORRECTNESS, "ghost", "correct"), actor=COMMAND_LINE)
    assert len(adjudications_for(engine, RULE_CORRECTNESS)) == 1


def test_task_queue_per_skill_version(engine):
    assert add_task_items(engine, RULE_CORRECTNESS, "refunds", 1, ["R1", "R2", "R3"]) == 3
    assert add_task_items(engine, RULE_CORRECTNESS, "refunds", 1, ["R2", "R4"]) == 1
    add_task_items(engine, RULE_CORRECTNESS, "refunds", 2, ["R9"])
    assert task_items(engine, RULE_CORRECTNESS, "refunds", 1) == ["R1", "R2", "R3", "R4"]
    assert task_items(engine, RULE_CORRECTNESS, "refunds", 2) == ["R9"]
    assert task_items(engine, CDG_INSPECTION, "refunds", 1) == []
    with pytest.raises(LabelError, match="non-empty strings"):
        add_task_items(engine, RULE_CORRECTNESS, "refunds", 1, [""])


# ---- concurrency -----------------------------------------------------------------------

N_THREADS = 4
N_PROCESSES = 3
PER_WRITER = 25


def write_labels(url: str, writer: str, barrier) -> None:
    """One writer: its own engine (as a separate process would have), one label per call."""
    engine = make_engine(url)
    try:
        barrier.wait()
        for i in range(PER_WRITER):
            add_label(engine, Label(f"R{i}", RULE_CORRECTNESS, writer,
                                    "correct" if i % 2 else "incorrect",
                                    None if i % 2 else "not_atomic"), actor=COMMAND_LINE)
    finally:
        engine.dispose()


@pytest.mark.slow
def test_concurrent_threads_and_processes_lose_no_label(engine, db_url, spawn_safe_main):
    # Tables exist before the writers start (make_engine in the fixture).
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(N_THREADS + N_PROCESSES, timeout=120)
    processes = [
        context.Process(target=write_labels, args=(db_url, f"proc{k}", barrier))
        for k in range(N_PROCESSES)
    ]
    errors: list[BaseException] = []

    def thread_writer(name: str) -> None:
        try:
            write_labels(db_url, name, barrier)
        except BaseException as exc:  # surfaced in the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=thread_writer, args=(f"thread{k}",))
               for k in range(N_THREADS)]
    for process in processes:
        process.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    for process in processes:
        process.join(timeout=180)
    assert not errors, errors
    assert [p.exitcode for p in processes] == [0] * N_PROCESSES

    stored = labels_for(engine, RULE_CORRECTNESS)
    writers = [f"thread{k}" for k in range(N_THREADS)] + [f"proc{k}" for k in range(N_PROCESSES)]
    assert len(stored) == len(writers) * PER_WRITER
    assert {(lab.annotator, lab.item) for lab in stored} == {
        (w, f"R{i}") for w in writers for i in range(PER_WRITER)}


def test_label_and_adjudication_tables_hold_exactly_their_records_fields():
    # Rows are built with **fields and SQLModel ignores unknown keywords: a record field
    # without a column would be dropped without a word. ``item`` is stored as ``item_key``.
    from dataclasses import fields

    from store.annotation import AnnotationAdjudication, AnnotationLabel
    from workbench.annotation import Adjudication, Label

    for table, record in ((AnnotationLabel, Label), (AnnotationAdjudication, Adjudication)):
        columns = {c.name for c in table.__table__.columns} - {"id"}
        assert columns == {"item_key" if f.name == "item" else f.name for f in fields(record)}
