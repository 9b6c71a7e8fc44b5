"""Outcomes rows from audit traces (issue 8, item 1) and ``workbench scaling-outcomes``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.audit_data import DEMO, demo_index
from workbench.audit import AuditCase, AuditIndex, AuditOptions, audit_case, load_cases
from workbench.audit.trace import AuditError, Verdict
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.graph.stats import complexity
from workbench.identity.roles import COMMAND_LINE
from workbench.scaling import load_outcomes, outcomes_from_records
from workbench.scaling.from_traces import (
    TracesError,
    instance_skills,
    outcomes_from_runs,
    outcomes_from_traces,
    select_traces,
)

# mor-001 (negative, names its SKILL), mor-004 (positive, routed by keywords),
# air-001 (negative), ret-004 (positive, routed to two SKILLs).
IDS = ["mor-001-delay-not-yet-late", "mor-004-partial-cancel-min-spend",
       "air-001-compensation-regular-economy", "ret-004-return-to-gift-card"]


@pytest.fixture(scope="module")
def index():
    return demo_index()


@pytest.fixture(scope="module")
def cases():
    by_id = {c.id: c for c in load_cases(DEMO / "cases.jsonl")}
    return [by_id[i] for i in IDS]


@pytest.fixture(scope="module")
def base_traces(index, cases):
    aindex = AuditIndex(index)
    return [audit_case(c, aindex, "cdg", None, AuditOptions(judge_mode="none")) for c in cases]


def judged(traces, verdicts, strategy="cdg"):
    """Copies of ``traces`` with the given verdicts (None = a failed judge call)."""
    out = []
    for t, v in zip(traces, verdicts, strict=True):
        t = replace(t, strategy=strategy, judge_mode="whole")
        if v is None:
            t = replace(t, verdict=None, error=AuditError("ModelCallError", "timeout", "timeout"))
        else:
            t = replace(t, verdict=Verdict(v, "", []))
        out.append(t)
    return out


def test_rows_score_verdicts_against_gold_and_failures_as_wrong(index, cases, base_traces):
    traces = judged(base_traces, [True, True, None, False])
    rows = outcomes_from_traces(traces, cases, index, 1.5, "demo")
    got = {r["instance"]: (r["correct"], r["error"]) for r in rows}
    assert got == {IDS[0]: (1, ""),           # violation found, gold negative
                   IDS[1]: (0, ""),           # violation claimed, gold positive
                   IDS[2]: (0, "ModelCallError"),  # failed verdict counts incorrect
                   IDS[3]: (1, "")}
    assert {r["params_b"] for r in rows} == {1.5} and {r["dataset"] for r in rows} == {"demo"}
    assert rows[0]["session"] == cases[0].session and rows[0]["label"] == "negative"
    frame = outcomes_from_records(rows)  # valid for the scaling analysis as it stands
    assert len(frame) == 4 and frame["correct"].tolist() == [1, 0, 0, 1]


def test_complexity_is_that_of_the_cases_skills_taken_together(index, cases, base_traces):
    rows = {r["instance"]: r for r in
            outcomes_from_traces(judged(base_traces, [True] * 4), cases, index, 7, "demo")}
    merchant, retail = index.skills["merchant-order-refund"], index.skills["retail-policy"]
    assert rows[IDS[0]]["complexity"] == pytest.approx(complexity([merchant]))
    assert rows[IDS[1]]["complexity"] == pytest.approx(complexity([merchant]))  # routed there
    assert rows[IDS[2]]["complexity"] == pytest.approx(complexity([index.skills["airline-policy"]]))
    # Routed to two SKILLs: C of both graphs together, not an average of the two.
    assert rows[IDS[3]]["complexity"] == pytest.approx(complexity([retail, merchant]))
    assert complexity([retail, merchant]) not in (complexity([retail]), complexity([merchant]))


def test_routed_skills_are_pooled_across_judges(cases, base_traces):
    unnamed = cases[1]
    assert not unnamed.skills
    a = replace(base_traces[1], skills=["merchant-order-refund"])
    b = replace(base_traces[1], skills=["retail-policy"])
    named = replace(base_traces[0], skills=["retail-policy"])  # the case's own SKILLs win
    skills = instance_skills([a, b, named], cases)
    assert skills[unnamed.id] == ["merchant-order-refund", "retail-policy"]
    assert skills[cases[0].id] == ["merchant-order-refund"]


def test_runs_of_two_judges_share_one_complexity_per_case(index, cases, base_traces):
    small = judged(base_traces, [True, True, None, False])
    big = [replace(t, skills=["retail-policy", "merchant-order-refund"]) if t.id == IDS[1] else t
           for t in judged(base_traces, [True, False, True, False])]
    rows = outcomes_from_runs([(small, 1.5), (big, 9.0)], cases, index, "demo")
    assert len(rows) == 8 and {r["params_b"] for r in rows} == {1.5, 9.0}
    per_case = {}
    for r in rows:
        per_case.setdefault(r["instance"], set()).add(r["complexity"])
    assert all(len(c) == 1 for c in per_case.values())  # same C whichever judge scored it
    # mor-004 names no SKILL: both judges' routings pooled, as instance_skills does
    merchant, retail = index.skills["merchant-order-refund"], index.skills["retail-policy"]
    assert per_case[IDS[1]].pop() == pytest.approx(complexity([merchant, retail]))
    big_rows = {r["instance"]: r["correct"] for r in rows if r["params_b"] == 9.0}
    assert big_rows == {IDS[0]: 1, IDS[1]: 1, IDS[2]: 1, IDS[3]: 1}  # air-001 is a violation


def test_one_configuration_and_the_newest_trace_per_case(index, cases, base_traces):
    cdg = judged(base_traces, [False] * 4)
    raw = judged(base_traces, [True] * 4, strategy="raw")
    with pytest.raises(TracesError, match="mix 2 configurations"):
        outcomes_from_traces(cdg + raw, cases, index, 1.5, "demo")
    rows = outcomes_from_traces(cdg + raw, cases, index, 1.5, "demo", strategy="raw")
    assert {r["strategy"] for r in rows} == {"raw"} and len(rows) == 4
    newer = judged(base_traces[:1], [True])
    assert [t.verdict.violation for t in select_traces(cdg + newer)][0] is True
    assert len(select_traces(cdg + newer)) == 4


def test_unlabelled_and_caseless_traces(index, cases, base_traces):
    unlabelled = AuditCase(id=IDS[0], model_response="x", label=None,
                           skills=["merchant-order-refund"])
    rows = outcomes_from_traces(judged(base_traces[:1], [True]), [unlabelled], index, 1.5, "d")
    assert rows == []  # nothing to score
    # Without its case a trace still scores from its own label, session and routing.
    t = replace(judged(base_traces[:1], [True])[0], session="")
    [row] = outcomes_from_traces([t], [], index, 1.5, "d")
    assert row["correct"] == 1 and row["session"] == IDS[0]  # no session: its own


def test_errors_name_the_fix(index, cases, base_traces):
    t = judged(base_traces[:1], [True])
    with pytest.raises(TracesError, match="does not hold"):
        outcomes_from_traces(t, cases, PolicyIndex([index.skills["retail-policy"]]), 1.5, "d")
    with pytest.raises(TracesError, match="names no SKILL"):
        outcomes_from_traces([replace(t[0], skills=[])], [], index, 1.5, "d")
    with pytest.raises(TracesError, match="params_b"):
        outcomes_from_traces(t, cases, index, 0, "d")
    with pytest.raises(TracesError, match="dataset"):
        outcomes_from_traces(t, cases, index, 1.5, " ")


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows))
    return path


def test_cli_builds_a_table_of_several_judges(tmp_path, base_traces, cases, capsys):
    small = write_jsonl(tmp_path / "small.jsonl", judged(base_traces, [True, True, None, True]))
    big = write_jsonl(tmp_path / "big.jsonl", judged(base_traces, [True, False, True, False]))
    cases_file = tmp_path / "demo-cases.jsonl"
    cases_file.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases))
    out = tmp_path / "outcomes.csv"
    code = main(["scaling-outcomes", str(small), str(big), "--cases", str(cases_file),
                 "--index", str(DEMO / "index.json"), "--params-b", "1.5", "--params-b", "7",
                 "--out", str(out)])
    assert code == 0
    assert "8 rows from 8 traces in 2 file(s)" in capsys.readouterr().err
    table = load_outcomes(out)
    assert set(table["dataset"]) == {"demo-cases"}  # default: the cases file's name
    by_size = table.groupby("params_b")["correct"].sum().to_dict()
    assert by_size == {1.5: 1, 7.0: 4}  # small: only mor-001 right; big: all four
    # One complexity per instance whichever judge scored it.
    assert (table.groupby("instance")["complexity"].nunique() == 1).all()
    jsonl = tmp_path / "outcomes.jsonl"
    assert main(["scaling-outcomes", str(small), "--cases", str(cases_file), "--index",
                 str(DEMO / "index.json"), "--params-b", "3", "--dataset", "x",
                 "--out", str(jsonl)]) == 0
    assert load_outcomes(jsonl)["complexity"].tolist() == pytest.approx(
        table[table["params_b"] == 1.5]["complexity"].tolist())


def test_cli_errors(tmp_path, base_traces, cases, capsys):
    mixed = write_jsonl(tmp_path / "mixed.jsonl", judged(base_traces, [True] * 4)
                        + judged(base_traces, [True] * 4, strategy="raw"))
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases))
    common = ["--cases", str(cases_file), "--index", str(DEMO / "index.json")]
    assert main(["scaling-outcomes", str(mixed), *common, "--params-b", "1",
                 "--out", str(tmp_path / "o.csv")]) == 2
    assert "pick one strategy (--strategy)" in capsys.readouterr().err
    assert main(["scaling-outcomes", str(mixed), *common, "--params-b", "1", "--strategy", "raw",
                 "--out", str(tmp_path / "o.csv")]) == 0
    assert main(["scaling-outcomes", str(mixed), str(mixed), *common, "--params-b", "1",
                 "--params-b", "2", "--params-b", "3", "--out", str(tmp_path / "o.csv"),
                 "--force"]) == 2
    assert "one size for all files or one per file" in capsys.readouterr().err
    assert main(["scaling-outcomes", str(mixed), *common, "--params-b", "1",
                 "--out", str(tmp_path / "o.txt")]) == 2
    assert "name the file .csv or .jsonl" in capsys.readouterr().err
    assert main(["scaling-outcomes", str(tmp_path / "nope.jsonl"), *common, "--params-b", "1",
                 "--out", str(tmp_path / "o.csv"), "--force"]) == 2
    assert "no such traces file" in capsys.readouterr().err


def test_cli_reads_stored_runs(tmp_path, demo_db, base_traces, capsys):
    from store import audit_repo

    engine = demo_db[0]  # all demo cases stored; only the four IDS have traces
    for run, verdicts in (("small", [True, True, None, True]), ("big", [True, False, True, False])):
        for trace in judged(base_traces, verdicts):
            audit_repo.save_trace(engine, trace, run_id=run, dataset="demo", actor=COMMAND_LINE)
    out = tmp_path / "stored.csv"
    assert main(["scaling-outcomes", "--store", "demo", "--run", "small=1.5", "--run", "big=7",
                 "--out", str(out)]) == 0
    assert "8 rows from 8 traces in 2 stored run(s)" in capsys.readouterr().err
    table = load_outcomes(out)
    assert table.groupby("params_b")["correct"].sum().to_dict() == {1.5: 1, 7.0: 4}
    assert set(table["dataset"]) == {"demo"}
    # the same table as from files: one complexity per instance
    assert (table.groupby("instance")["complexity"].nunique() == 1).all()
    # (--force: the table above is there; an existing --out is otherwise refused first)
    assert main(["scaling-outcomes", "--store", "demo", "--run", "huge=70", "--out", str(out),
                 "--force"]) == 2
    assert "no stored run 'huge' in dataset 'demo' (stored runs: big, small)" in capsys.readouterr().err
    assert main(["scaling-outcomes", "--store", "demo", "--run", "small", "--out", str(out),
                 "--force"]) == 2
    assert "must be RUN_ID=B" in capsys.readouterr().err
    assert main(["scaling-outcomes", "--out", str(out), "--force"]) == 2
    assert "missing TRACES.jsonl, --cases, --index, --params-b" in capsys.readouterr().err
