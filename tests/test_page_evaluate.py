"""The Evaluate page, headless with AppTest: metrics of stored runs side by side, both ways of
comparing runs, the charts, the CSV export, and names that look like HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo
from store.db import make_engine
from workbench.audit import AuditIndex, AuditOptions, AuditTrace, Verdict, audit_case, load_cases
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "evaluate.py")
STUDIES = str(ROOT / "pages" / "studies.py")  # the lab's results (retrieval, length sweep)
DEMO = ROOT / "fixtures" / "demo"
ODD = "<b>odd</b> set"


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'evaluate.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    cases = load_cases(DEMO / "cases.jsonl")[:4]  # mor-001 neg, mor-002 neg, mor-003 pos, mor-004 pos
    audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
    index = AuditIndex(PolicyIndex.load(DEMO / "index.json"))
    for strategy, run, verdicts in (("cdg", "run-1", [True, True, False, True]),
                                    ("raw", "run-2", [True, False, True, True]),
                                    ("cdg", "run-3", [True, True, False, False])):
        traces = []
        for case, violation in zip(cases, verdicts, strict=True):
            t = audit_case(case, index, strategy, None, AuditOptions(judge_mode="none"))
            t.judge_mode = "whole"
            # A violation names a rule of its context, as the whole-mode judge must.
            t.verdict = Verdict(violation, "r", (t.closure_ids or t.units)[:1] if violation else [])
            traces.append(t)
        audit_repo.save_traces(eng, traces, run, "demo", actor=COMMAND_LINE)
    audit_repo.save_traces(eng, [AuditTrace(id="x", strategy="cdg", label="negative",
                                            verdict=Verdict(True, "", ["R1"]))], "r<script>", ODD,
                            actor=COMMAND_LINE)
    yield eng
    eng.dispose()


def table(at: AppTest):
    return at.dataframe[0].value


def test_runs_side_by_side_with_charts_and_csv(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    frame = table(at)
    demo = frame[frame["dataset"] == "demo"].set_index("run")
    # run-1: TP TP TN FP -> ACC 3/4, P 2/3, R 1, F1 = 4/5. run-2: TP FN FP FP -> ACC 1/4,
    # P 1/3, R 1/2, F1 = 2/5. run-3: all right -> 1, 1.
    assert demo.loc["run-1", "ACC"] == pytest.approx(0.75)
    assert demo.loc["run-1", "violation-F1"] == pytest.approx(0.8)
    assert demo.loc["run-2", "ACC"] == pytest.approx(0.25)
    assert demo.loc["run-2", "violation-F1"] == pytest.approx(0.4)
    assert demo.loc["run-3", "ACC"] == 1.0
    assert demo.loc["run-2", "strategy"] == "raw"
    # The raw document is longer than any closure: more context tokens per case.
    assert demo.loc["run-2", "context tokens"] > demo.loc["run-1", "context tokens"] > 0
    assert set(frame["dataset"]) == {"demo", ODD}
    every = at.get("plotly_chart")
    # each bundled study of verdicts from activations draws its AUROC bars and learning curve
    from components.activation_study import BUNDLED, study_results
    studies = study_results(BUNDLED)
    assert len(studies) >= 1
    assert {c.key for c in every if c.key.startswith("ev_act_")} == {
        f"ev_act_{kind}_{i}" for i in range(len(studies)) for kind in ("auroc", "curve")}
    charts = [c for c in every if not c.key.startswith("ev_act_")]
    assert len(charts) == 3
    spec = json.loads(charts[0].proto.spec)
    names = {trace["name"] for trace in spec["data"]}
    assert names == {"demo", "&lt;b&gt;odd&lt;/b&gt; set"}  # plotly shows entities as text
    assert not any("<b>odd" in json.dumps(json.loads(c.proto.spec)["data"]) for c in charts)
    assert at.get("download_button")[0].proto.label == "Download CSV"


def test_newest_trace_per_case_and_strategy(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.multiselect(key="ev_datasets").set_value(["demo"])
    at.radio(key="ev_compare").set_value("newest trace per case and strategy").run()
    frame = table(at).set_index("strategy")
    assert list(frame["run"].unique()) == ["latest"]
    assert frame.loc["cdg", "ACC"] == 1.0  # run-3 replaced run-1 for every cdg case
    assert frame.loc["cdg", "cases"] == 4 and frame.loc["raw", "ACC"] == pytest.approx(0.25)


def test_runs_filter(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.multiselect(key="ev_runs").set_value(["run-1", "run-2"]).run()
    assert sorted(table(at)["run"]) == ["run-1", "run-2"]


def test_empty_store_says_how_to_get_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'empty.db'}")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert "No stored audit runs yet" in at.info[0].value


def test_result_file_names_are_text_not_markdown(tmp_path, monkeypatch):
    """A results folder is anybody's folder: file names shown in warnings and expander
    titles are escaped (before: `**loud**` rendered bold, a Markdown link became a link)."""
    from components.safe import md

    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'empty.db'}")
    folder = tmp_path / "evaluations"
    folder.mkdir()
    (folder / "**loud**.json").write_text("{not json", encoding="utf-8")
    (folder / "[x](javascript:alert(1)).json").write_text(
        json.dumps({"kind": "retrieval", "points": "not a list"}), encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(folder))
    at = AppTest.from_file(STUDIES, default_timeout=60).run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert md("**loud**.json: not readable JSON; skipped") in warnings
    assert md("[x](javascript:alert(1)).json: not a result of workbench evaluate (ValueError)") in warnings
    assert at.expander[0].label == md("[x](javascript:alert(1)).json")
