"""Review decisions in the database: append-only, validated, all-or-none batches, concurrent
writers (threads and processes) losing nothing, and stored traces read back with run ids."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import UTC, datetime

import pytest

import store.review as review_store
from store.audit_repo import run_traces, save_traces, trace_datasets
from store.db import make_engine
from store.review import add_decision, add_decisions, decisions_for
from workbench.audit.trace import AuditTrace
from workbench.identity.roles import COMMAND_LINE
from workbench.review.queue import ReviewDecision, ReviewError, current_decisions


@pytest.fixture
def engine(store_engine):
    """Every test here runs on SQLite and on PostgreSQL (conftest ``store_url``)."""
    return store_engine


def d(case="c1", who="ada", what="confirm", note="", dataset="demo", run="r1", judge=True):
    return ReviewDecision(dataset, run, case, "cdg", who, what, note, judge)


def test_decisions_round_trip_oldest_first_and_timezone_aware(engine):
    when = datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    first = add_decision(engine, ReviewDecision("demo", "r1", "c1", "cdg", "ada", "overturn",
                                                "refund <b>allowed</b>", True, when), actor=COMMAND_LINE)
    second = add_decision(engine, d(what="confirm"), actor=COMMAND_LINE)
    assert second > first
    stored = decisions_for(engine, "demo")
    assert [x.decision for x in stored] == ["overturn", "confirm"]
    assert stored[0].note == "refund <b>allowed</b>" and stored[0].judge_violation is True
    assert stored[0].created_at == when and stored[0].created_at.tzinfo is not None
    # A changed mind is a newer record; the old one stays.
    assert current_decisions(stored)[(("r1", "c1", "cdg"), "ada")].decision == "confirm"


def test_filters(engine):
    add_decisions(engine, [d("c1", "ada"), d("c2", "bob"), d("c1", "bob", run="r2"),
                           d("c1", "ada", dataset="other")], actor=COMMAND_LINE)
    assert len(decisions_for(engine)) == 4
    assert len(decisions_for(engine, "demo")) == 3
    assert [x.case_id for x in decisions_for(engine, "demo", reviewer="bob")] == ["c2", "c1"]
    assert [x.reviewer for x in decisions_for(engine, "demo", run_id="r2")] == ["bob"]
    assert len(decisions_for(engine, "demo", case_id="c1")) == 2


def test_invalid_decisions_store_nothing(engine):
    with pytest.raises(ReviewError, match="needs a note"):
        add_decisions(engine, [d("c1"), d("c2", what="overturn")], actor=COMMAND_LINE)
    assert decisions_for(engine) == []  # the valid one in the same batch was not written either


def test_the_store_offers_no_way_to_change_or_remove_a_decision():
    public = [name for name in dir(review_store) if not name.startswith("_")]
    assert not [n for n in public if any(w in n.lower() for w in ("update", "delete", "remove",
                                                                   "edit", "set_"))]


def _write_many(url: str, who: str, n: int) -> None:
    eng = make_engine(url)
    for i in range(n):
        add_decision(eng, d(f"c{i}", who), actor=COMMAND_LINE)
    eng.dispose()


def test_concurrent_writers_in_threads_and_processes_lose_nothing(store_url, spawn_safe_main):
    url = store_url
    make_engine(url).dispose()  # create the schema once, before the writers race
    per_writer = 15
    threads = [threading.Thread(target=_write_many, args=(url, f"thread{k}", per_writer))
               for k in range(3)]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(url, f"proc{k}", per_writer)) for k in range(2)]
    for w in threads + procs:
        w.start()
    for t in threads:
        t.join(60)
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    eng = make_engine(url)
    stored = decisions_for(eng)
    eng.dispose()
    assert len(stored) == 5 * per_writer
    by_writer = {}
    for x in stored:
        by_writer.setdefault(x.reviewer, []).append(x.case_id)
    # Each writer's own records are all there, in the order it wrote them.
    assert by_writer == {w: [f"c{i}" for i in range(per_writer)]
                         for w in ("thread0", "thread1", "thread2", "proc0", "proc1")}


def test_run_traces_carry_run_ids_and_skip_damaged_rows(engine):
    from sqlmodel import Session

    from store.core_tables import AuditResultRow

    save_traces(engine, [AuditTrace("c1", "cdg"), AuditTrace("c2", "cdg")], "r1", "demo", actor=COMMAND_LINE)
    save_traces(engine, [AuditTrace("c1", "raw")], "r2", "demo", actor=COMMAND_LINE)
    save_traces(engine, [AuditTrace("x", "cdg")], "r1", "other", actor=COMMAND_LINE)
    with Session(engine) as session:
        session.add(AuditResultRow(run_id="r3", dataset="demo", case_id="c9", strategy="cdg",
                                   trace_json="{half a line"))
        session.commit()
    assert trace_datasets(engine) == ["demo", "other"]
    assert [(r, t.id, t.strategy) for r, t in run_traces(engine, "demo")] == [
        ("r1", "c1", "cdg"), ("r1", "c2", "cdg"), ("r2", "c1", "raw")]
    assert [r for r, _t in run_traces(engine, "demo", ["r2"])] == ["r2"]
    assert run_traces(engine, "demo", []) == []
