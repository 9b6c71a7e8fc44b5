"""Writes that never lose or duplicate: stale SKILL saves refused, stored runs idempotent,
failed cases retried on resume, and model error payloads bounded (issues #15 and #16)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from store import repo
from store.audit_repo import latest_traces, load_traces, save_traces
from workbench.audit.cases import load_cases
from workbench.audit.pipeline import AuditOptions
from workbench.audit.policy import AuditIndex
from workbench.audit.runner import run_audit
from workbench.audit.trace import AuditError, AuditTrace, latest_per_case, trace_key
from workbench.audit.trace_file import read_traces
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.graph.editing import apply_edits
from workbench.identity.roles import COMMAND_LINE
from workbench.llm.errors import MAX_MESSAGE_CHARS, ModelCallError, bound_message

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
NO_JUDGE = AuditOptions(judge_mode="none")


@pytest.fixture
def engine(store_engine):
    """Every test here runs on SQLite and on PostgreSQL (conftest ``store_url``)."""
    return store_engine


def _edit_rows(skill):
    rules = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
             for r in skill.graph.rules.values()]
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
    return rules, edges


# -- issue #16 item 1: an edit of an old version never reverts later ones ------------------

def test_save_from_an_old_version_is_refused_with_what_changed_since(engine, refund_index_data):
    repo.import_index(engine, PolicyIndex.from_dict(refund_index_data), actor=COMMAND_LINE)
    v1 = repo.load_skill(engine, "refunds", 1)
    rules, edges = _edit_rows(v1)
    v2 = apply_edits(v1, rules, [e for e in edges if (e["source"], e["target"]) != ("R2", "R1")])
    assert repo.save_skill(engine, v2.skill, base_version=1, actor=COMMAND_LINE).version == 2

    # An author still looking at v1 changes a rule and saves: that would drop v2's edge edit.
    rules[0]["action"] = "verify identity twice"
    stale = apply_edits(v1, rules, edges)
    with pytest.raises(repo.StaleVersion) as err:
        repo.save_skill(engine, stale.skill, author="ana", base_version=1, actor=COMMAND_LINE)
    assert (err.value.base, err.value.latest) == (1, 2)
    assert "removed edges R2->R1" in err.value.changes
    assert "version 2 is the latest" in str(err.value)
    assert [v.version for v in repo.versions(engine, "refunds")] == [1, 2]  # nothing saved

    # The same edit made on the latest version goes through and keeps v2's change.
    rules2, edges2 = _edit_rows(repo.load_skill(engine, "refunds", 2))
    rules2[0]["action"] = "verify identity twice"
    fresh = apply_edits(repo.load_skill(engine, "refunds", 2), rules2, edges2)
    saved = repo.save_skill(engine, fresh.skill, author="ana", base_version=2, actor=COMMAND_LINE)
    assert saved.version == 3
    v3 = repo.load_skill(engine, "refunds", 3)
    assert ("R2", "R1") not in {(e.source, e.target) for e in v3.graph.edges}
    assert v3.graph.rules["R1"].action == "verify identity twice"


def test_version_numbers_are_never_reused_after_a_delete(engine, refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    repo.import_index(engine, index, actor=COMMAND_LINE)
    repo.delete_skill(engine, "refunds", actor=COMMAND_LINE)
    assert repo.import_index(engine, index, actor=COMMAND_LINE)[0].version == 2


# -- issue #15 defect 8: storing a finished run again stores nothing -----------------------

def test_storing_the_same_traces_twice_adds_nothing(engine, tmp_path):
    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = load_cases(FIX / "merchant_cases.jsonl")
    out = tmp_path / "t.jsonl"
    run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    traces, _ = read_traces(out)
    assert save_traces(engine, traces, "R", "ds", actor=COMMAND_LINE) == 4
    assert save_traces(engine, traces, "R", "ds", actor=COMMAND_LINE) == 0
    # a repeat within one call too
    assert save_traces(engine, traces + traces, "R2", "ds", actor=COMMAND_LINE) == 4
    # A changed trace of the same case (a retry that now succeeds) is added and is the newest.
    changed = dataclasses.replace(traces[0], context_tokens=traces[0].context_tokens + 1)
    assert save_traces(engine, [changed], "R", "ds", actor=COMMAND_LINE) == 1
    assert len(load_traces(engine, run_id="R")) == 5
    assert latest_traces(engine, "ds")[(changed.id, "cdg")] == changed


def test_rerunning_a_finished_cli_audit_with_store_stores_nothing_new(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "wb.db"))
    args = ["audit", "--index", str(FIX / "merchant_index.json"), "--cases",
            str(FIX / "merchant_cases.jsonl"), "--no-judge", "--strategy", "cdg",
            "--out", str(tmp_path / "t.jsonl"), "--store", "ds", "--run-id", "R"]
    assert main(args) == 0
    assert main(args) == 0
    assert "0 new traces" in capsys.readouterr().err
    from store.db import make_engine

    assert len(load_traces(make_engine(), run_id="R")) == 4  # was 8 before the fix


# -- issue #15 defect 2: resume retries failed cases ---------------------------------------

def _with_errors(out: Path, kinds: dict[str, str]) -> None:
    """Rewrite ``out`` so the named cases' traces failed with the given error kinds."""
    traces, _ = read_traces(out)
    with open(out, "w", encoding="utf-8") as f:
        for t in traces:
            if t.id in kinds:
                t.error = AuditError(kinds[t.id], "boom", "server_error")
            f.write(json.dumps(t.to_dict()) + "\n")


def test_resume_retries_cases_that_failed_on_the_model(tmp_path):
    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = load_cases(FIX / "merchant_cases.jsonl")
    out = tmp_path / "t.jsonl"
    run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    a, b, c = (case.id for case in cases[:3])
    _with_errors(out, {a: "ModelCallError", b: "InternalError", c: "EmptySeed"})

    kept = run_audit(cases, index, "cdg", out, options=NO_JUDGE, retry_failed=False)
    assert (kept.done, kept.retried, kept.skipped) == (0, 0, 4)

    again = run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    # EmptySeed follows from the case and the index: another attempt would say the same.
    assert (again.done, again.retried, again.skipped) == (2, 2, 2)
    traces, _ = read_traces(out)
    assert len(traces) == 6  # the failed traces stay in the file as history
    newest = {t.id: t for t in latest_per_case(traces, key=trace_key)}
    assert newest[a].error is None and newest[b].error is None
    assert newest[c].error.kind == "EmptySeed"
    # Nothing left to retry: a third run does nothing.
    assert run_audit(cases, index, "cdg", out, options=NO_JUDGE).done == 0


# -- issue #15 defect 7: error payloads are bounded ----------------------------------------

def test_bound_message_cuts_with_a_marker_and_is_stable():
    huge = "x" * 5_000_000
    cut = bound_message(huge)
    assert len(cut) <= MAX_MESSAGE_CHARS
    assert cut.endswith("[cut: 5,000,000 characters in all]")
    assert bound_message(cut) == cut
    assert bound_message("short") == "short"


def test_a_huge_model_answer_does_not_blow_up_traces_or_the_database(engine):
    junk = "not json " * 600_000  # ~5 MB, what a broken judge sent
    exc = ModelCallError(f"the answer was unusable ({junk})", role="judge", model="m",
                         endpoint="http://127.0.0.1:1/v1", kind="invalid_output", hint="the model")
    assert len(str(exc)) <= MAX_MESSAGE_CHARS and "judge call to m" in str(exc)
    trace = AuditTrace(id="c1", strategy="cdg")
    trace.error = AuditError("ModelCallError", f"judge: {junk}", "invalid_output")
    assert len(trace.error.message) <= MAX_MESSAGE_CHARS
    # A trace file written before the fix still loads bounded.
    old = dict(trace.to_dict(), error={"kind": "ModelCallError", "message": junk, "cause": ""})
    assert len(AuditTrace.from_dict(old).error.message) <= MAX_MESSAGE_CHARS
    save_traces(engine, [trace], "R", "ds", actor=COMMAND_LINE)
    from sqlmodel import Session, select

    from store.core_tables import AuditResultRow

    with Session(engine) as session:
        row = session.exec(select(AuditResultRow)).one()
    assert len(row.error) <= MAX_MESSAGE_CHARS and len(row.trace_json) < 10_000


def test_cases_that_failed_in_a_500_storm_succeed_on_resume(tmp_path):
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import FakeChatServer, reply, role_env, status

    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = load_cases(FIX / "merchant_cases.jsonl")
    out = tmp_path / "t.jsonl"
    ok = reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"})
    with FakeChatServer(default=ok) as srv:
        gw = Gateway(config=load_config(env=role_env(srv.api_base, retries=0)),
                     sleep=lambda _s: None)
        srv.push(*[status(500)] * 2)  # the storm: two cases fail for good
        first = run_audit(cases, index, "cdg", out, gw, concurrency=1)
        assert first.errors == {"ModelCallError": 2}
        again = run_audit(cases, index, "cdg", out, gw, concurrency=1)
        assert (again.done, again.retried, again.skipped) == (2, 2, 2)
        assert again.errors == {}
    assert all(t.error is None for t in latest_per_case(read_traces(out)[0], key=trace_key))


def test_metrics_and_import_traces_count_a_retried_case_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "wb.db"))
    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = load_cases(FIX / "merchant_cases.jsonl")
    out = tmp_path / "t.jsonl"
    run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    _with_errors(out, {cases[0].id: "ModelCallError"})
    imported = ["import-traces", str(out), "--dataset", "ds", "--run-id", "R"]
    assert main(imported) == 0
    run_audit(cases, index, "cdg", out, options=NO_JUDGE)  # the retry appends a newer trace
    assert len(read_traces(out)[0]) == 5
    capsys.readouterr()
    assert main(["metrics", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["n"] == 4
    assert main(imported) == 0  # the retried case's new trace replaces the failed one
    assert main(imported) == 0  # and importing again adds nothing
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["R: 1 new trace(s), 3 already stored", "R: 0 new trace(s), 4 already stored"]
    from store.db import make_engine

    newest = latest_traces(make_engine(), "ds")
    assert len(newest) == 4 and all(t.error is None for t in newest.values())


def test_a_5_mb_judge_answer_leaves_small_traces_and_a_small_database(tmp_path, engine):
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import FakeChatServer, reply, role_env

    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = load_cases(FIX / "merchant_cases.jsonl")[:2]
    out = tmp_path / "t.jsonl"
    # Valid JSON that misses the schema: the schema error quoted the 5 MB value, twice (the
    # answer and the repair), in every trace.
    junk = reply({"violation": "x" * 5_000_000, "violated_rules": [], "evidence": [], "reason": "r"})
    with FakeChatServer(default=junk) as srv:
        gw = Gateway(config=load_config(env=role_env(srv.api_base, retries=0)),
                     sleep=lambda _s: None)
        summary = run_audit(cases, index, "cdg", out, gw, concurrency=1)
    assert summary.errors == {"ModelCallError": 2}
    traces, _ = read_traces(out)
    assert all(len(t.error.message) <= MAX_MESSAGE_CHARS for t in traces)
    assert all("characters in all]" in t.error.message for t in traces)
    assert out.stat().st_size < 100_000  # was 20 MB: 10,006,151 bytes per trace line
    before = _database_bytes(engine)
    save_traces(engine, traces, "R", "ds", actor=COMMAND_LINE)
    assert _database_bytes(engine) - before < 2_000_000  # was 42 MB


def _database_bytes(engine) -> int:
    if engine.dialect.name == "sqlite":
        db = Path(engine.url.database)
        wal = Path(f"{db}-wal")
        return db.stat().st_size + (wal.stat().st_size if wal.is_file() else 0)
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar())


def test_the_cli_says_how_many_failed_cases_it_retried(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    args = ["audit", "--index", str(FIX / "merchant_index.json"), "--cases",
            str(FIX / "merchant_cases.jsonl"), "--no-judge", "--strategy", "cdg", "--out", str(out)]
    assert main(args) == 0
    first = load_cases(FIX / "merchant_cases.jsonl")[0].id
    _with_errors(out, {first: "ModelCallError"})
    assert main([*args, "--no-retry-failed"]) == 0
    assert "0 audited (0 of them retried after an earlier error), 4 already in" in capsys.readouterr().err
    assert main(args) == 0
    assert "1 audited (1 of them retried after an earlier error), 3 already in" in capsys.readouterr().err
