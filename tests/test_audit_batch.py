"""Batch runs: resumable traces JSONL, the CLI, the store, and the CompliBench import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from store.audit_repo import datasets, latest_traces, load_traces, runs, save_cases, save_traces
from store.audit_repo import load_cases as db_cases
from workbench.audit.cases import load_cases
from workbench.audit.importers.complibench import import_complibench
from workbench.audit.pipeline import AuditOptions
from workbench.audit.policy import AuditIndex
from workbench.audit.runner import run_audit
from workbench.audit.trace_file import read_traces
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
NO_JUDGE = AuditOptions(judge_mode="none")


@pytest.fixture(scope="module")
def index():
    return AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))


def test_run_is_resumable(index, tmp_path):
    cases = load_cases(FIX / "merchant_cases.jsonl")
    out = tmp_path / "traces.jsonl"
    first = run_audit(cases[:2], index, "cdg", out, options=NO_JUDGE)
    assert (first.done, first.skipped) == (2, 0)
    with open(out, "a") as f:
        f.write('{"id": "half-writ')  # a crash mid-line must not break resuming
    again = run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    assert (again.done, again.skipped) == (2, 2)
    traces, problems = read_traces(out)
    assert sorted(t.id for t in traces) == sorted(c.id for c in cases)
    assert len(problems) == 1 and f"{out}:3:" in problems[0]  # the torn line, named
    # Another strategy over the same file is a different run.
    assert run_audit(cases, index, "raw", out, options=NO_JUDGE).done == 4
    for t in (t.to_dict() for t in read_traces(out)[0]):
        assert {"id", "strategy", "keywords", "skills", "seeds", "closure", "context_tokens",
                "verdict", "error", "usage"} <= set(t)


def test_cli_audit_and_metrics(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    args = ["audit", "--index", str(FIX / "merchant_index.json"), "--cases",
            str(FIX / "merchant_cases.jsonl"), "--no-judge", "--out", str(out)]
    assert main([*args, "--strategy", "cdg"]) == 0
    assert main([*args, "--strategy", "bm25", "--top-k", "2"]) == 0
    assert main([*args, "--strategy", "cdg"]) == 0  # resumed: nothing new
    assert len(read_traces(out)[0]) == 8
    capsys.readouterr()
    assert main(["metrics", str(out), "--cases", str(FIX / "merchant_cases.jsonl")]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["metric", "cdg", "bm25"]
    assert main(["metrics", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["judged"] == 0 and rows[0]["labelled"] == 4 and rows[0]["acc"] == 0.0


def test_cli_errors_say_what_to_do(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    code = main(["audit", "--index", str(FIX / "merchant_index.json"), "--cases", str(bad),
                 "--strategy", "cdg", "--no-judge"])
    assert code == 2 and "model_response" in capsys.readouterr().err
    assert main(["metrics", str(tmp_path / "none.jsonl")]) == 2
    assert "workbench audit --out" in capsys.readouterr().err


def test_store_keeps_cases_and_traces(engine, index, tmp_path):
    cases = load_cases(FIX / "merchant_cases.jsonl")
    assert save_cases(engine, "merchant", cases, actor=COMMAND_LINE) == 4
    assert save_cases(engine, "merchant", cases[:1], actor=COMMAND_LINE) == 1  # update, not duplicate
    assert [c.to_dict() for c in db_cases(engine, "merchant")] == [c.to_dict() for c in cases]
    out = tmp_path / "t.jsonl"
    run_audit(cases, index, "cdg", out, options=NO_JUDGE)
    run_audit(cases, index, "raw", out, options=NO_JUDGE)
    traces, _ = read_traces(out)
    save_traces(engine, traces, "run-1", "merchant", actor=COMMAND_LINE)
    save_traces(engine, [t for t in traces if t.strategy == "cdg"], "run-2", "merchant", actor=COMMAND_LINE)
    assert datasets(engine) == ["merchant"] and runs(engine) == ["run-1", "run-2"]
    assert len(load_traces(engine, run_id="run-1")) == 8
    assert len(load_traces(engine, strategy="raw")) == 4
    latest = latest_traces(engine, "merchant")
    assert len(latest) == 8
    one = load_traces(engine, run_id="run-2", case_id="merchant-delay-violation")
    assert latest[("merchant-delay-violation", "cdg")] == one[0]


def test_import_complibench_sample(tmp_path, capsys):
    src = tmp_path / "data"
    shutil.copytree(FIX / "complibench" / "airlines", src)
    s = import_complibench(src, tmp_path / "out")
    # 3 conversations: 10 + 5 + 4 assistant turns; mistakes at turns 4, 6, 8, 14 and 0, 2.
    assert (s.conversations, s.skills, s.cases, s.violations) == (3, 3, 19, 6)
    index = PolicyIndex.load(tmp_path / "out" / "index.json")
    skill = index["airlines-loyalty-account-assistance-w0"]
    rule = skill.graph.rules["loyalty_account_assistance.w0.p5"]
    assert skill.rule_text(rule.id).startswith("Gather request specifics: Ask the caller")
    assert skill.graph.requires(rule.id) == ["loyalty_account_assistance.w0.p4"]
    assert (tmp_path / "out" / "skills" / skill.name / "SKILL.md").read_text() == skill.source
    cases = {c.id: c for c in load_cases(tmp_path / "out" / "cases.jsonl")}
    bad = cases["conversation_00000-t04"]
    assert bad.label == "negative" and bad.skills == [skill.name]
    assert [t.role for t in bad.turns] == ["assistant", "user", "assistant", "user"]
    assert bad.extra["gold"]["violated_rule"] == "loyalty_account_assistance.w0.p5"
    assert bad.extra["gold"]["governing_rule"] == "loyalty_account_assistance.w0.p5"
    assert bad.background["record_locator"] == "CRH511"
    ok = cases["conversation_00001-t06"]
    assert ok.label == "positive" and ok.extra["gold"]["governing_rule"].startswith("cond.")

    # Long variant: every other workflow of the domain is a distractor in each SKILL.
    main(["import-complibench", str(src), "--out", str(tmp_path / "long"), "--long",
          "--pseudonymise", "salt"])
    assert "3 SKILLs" in capsys.readouterr().out
    long_index = PolicyIndex.load(tmp_path / "long" / "index.json")
    long_skill = long_index[skill.name]
    assert len(long_skill.graph) > len(skill.graph)
    assert "request_special_assistance_services.w1.p1" in long_skill.graph.rules
    long_case = load_cases(tmp_path / "long" / "cases.jsonl")[0]
    assert len(long_case.session) == 64 and long_case.session != "conversation_00000"


def test_import_complibench_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no conversation_"):
        import_complibench(tmp_path, tmp_path / "out")
    (tmp_path / "conversation_1.json").write_text("{}")
    assert main(["import-complibench", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
