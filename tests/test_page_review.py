"""The Review page, headless with AppTest against a temporary database: the queue and its
filters, confirm/overturn decisions with progress and agreement, escaping, resumable batch
audits (contexts only, and with the embedded judge's recorded answers) and file loading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo, repo
from store.audit_repo import run_traces
from store.db import make_engine
from store.review import decisions_for
from workbench.audit import AuditIndex, AuditOptions, AuditTrace, Verdict, audit_case, load_cases
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "review.py")
DEMO = ROOT / "fixtures" / "demo"
INJECTION = '<img src=x onerror="alert(1)"> <script>alert(2)</script>'

# Hand-set verdicts (violation?) per case and strategy; gold: mor-001 and air-001 negative.
VERDICTS = {
    "cdg": {"mor-001-delay-not-yet-late": True, "mor-003-delay-premier-credit": True,
            "air-001-compensation-regular-economy": False, "ret-002-cancel-pending": False},
    "raw": {"mor-001-delay-not-yet-late": True, "mor-003-delay-premier-credit": True,
            "air-001-compensation-regular-economy": True, "ret-002-cancel-pending": False},
}


def seed_traces(eng, index: PolicyIndex, cases) -> None:
    """Traces built by the real pipeline without a judge, then given verdicts by hand."""
    aindex = AuditIndex(index)
    by_id = {c.id: c for c in cases}
    for strategy, verdicts in VERDICTS.items():
        traces = []
        for cid, violation in verdicts.items():
            t = audit_case(by_id[cid], aindex, strategy, None, AuditOptions(judge_mode="none"))
            t.judge_mode = "whole"
            # A violation names a rule of its context, as the whole-mode judge must.
            t.verdict = Verdict(violation, f"judge says {violation} {INJECTION}",
                                (t.closure_ids or t.units)[:1] if violation else [])
            traces.append(t)
        audit_repo.save_traces(eng, traces, f"run-{strategy}", "demo", actor=COMMAND_LINE)


@pytest.fixture
def db(demo_db):
    eng, index, cases = demo_db
    seed_traces(eng, index, cases)
    return eng


def open_page(reviewer: str | None = "ada") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    if reviewer is not None:
        at.text_input(key="rv_reviewer").set_value(reviewer).run()
    return at


def plain(markdown: str) -> str:
    """Text of a Markdown message whose punctuation the page escaped."""
    return markdown.replace("\\", "")


def card(at: AppTest) -> str:
    return next(t.value for t in at.text if " · case " in t.value)


def run_batch_audit(at: AppTest, run_id: str | None = None, **options: str) -> None:
    """Set the batch-audit selectors (``judge="whole"`` sets ``rv_audit_judge``), name the
    run, press Run; the page must not raise."""
    for name, value in options.items():
        at.selectbox(key=f"rv_audit_{name}").set_value(value)
    if run_id is not None:
        at.text_input(key="rv_run_id").set_value(run_id)
    at.button(key="rv_audit_run").click().run()
    assert not at.exception


def note_key(at: AppTest) -> str:
    return next(w.key for w in at.text_input if w.key.startswith("rv_note_"))


def test_queue_lists_flagged_disagreeing_and_gold_mismatched_verdicts(db):
    at = open_page()
    # ret-002 (compliant everywhere, gold compliant) has no reason to be in the queue.
    assert card(at) == "1/6 · case mor-001-delay-not-yet-late · cdg · run run-cdg"
    assert "In the queue because: decided violation" in [t.value for t in at.text]
    assert at.get("progress")[0].proto.text == "0 of 6 reviewed (0 by you)"
    at.multiselect(key="rv_reasons").set_value(["strategies-disagree"]).run()
    assert card(at).startswith("1/2 · case air-001-compensation-regular-economy · cdg")
    assert "Other strategies: raw: violation" in [t.value for t in at.text]
    at.multiselect(key="rv_reasons").set_value(["gold-mismatch"]).run()
    assert card(at).startswith("1/3 · case mor-003-delay-premier-credit · cdg")
    # Search reaches the conversation text: only the skillet case mentions a skillet.
    at.multiselect(key="rv_reasons").set_value(["decided-violation", "strategies-disagree", "gold-mismatch"])
    at.text_input(key="rv_query").set_value("SKILLET raw").run()
    assert card(at) == "1/1 · case mor-001-delay-not-yet-late · raw · run run-raw"
    at.text_input(key="rv_query").set_value("no such words").run()
    assert any("Nothing in the queue matches" in m.value for m in at.success)
    # One run only: no other strategy left to disagree with.
    at.text_input(key="rv_query").set_value("").run()
    at.multiselect(key="rv_runs_demo").set_value(["run-cdg"]).run()
    assert card(at).startswith("1/3 ")


def test_confirm_and_overturn_with_a_note_are_appended(db):
    at = open_page("ada")
    at.button(key="rv_confirm").click().run()
    assert not at.exception
    assert card(at).startswith("2/6 · case mor-003-delay-premier-credit · cdg")
    # Overturning needs a note: nothing is stored without one.
    at.button(key="rv_overturn").click().run()
    assert any("needs a note" in e.value for e in at.error)
    assert len(decisions_for(db, "demo")) == 1
    at.text_input(key=note_key(at)).set_value("premier credit is allowed <b>here</b>")
    at.button(key="rv_overturn").click().run()
    assert card(at).startswith("3/6 ")
    stored = [(d.reviewer, d.run_id, d.case_id, d.strategy, d.decision, d.note, d.judge_violation)
              for d in decisions_for(db, "demo")]
    assert stored == [
        ("ada", "run-cdg", "mor-001-delay-not-yet-late", "cdg", "confirm", "", True),
        ("ada", "run-cdg", "mor-003-delay-premier-credit", "cdg", "overturn",
         "premier credit is allowed <b>here</b>", True),
    ]
    assert at.get("progress")[0].proto.text == "2 of 6 reviewed (2 by you)"
    metrics = {m.label: m.value for m in at.metric}
    # Judge V, V; implied V, C: p_o = 1/2, p_e = (2*1 + 0*1)/4 = 1/2, kappa = 0.
    # Against gold (mor-001 violation, mor-003 compliant) both decisions are right.
    assert metrics == {"Decisions": "2", "Confirmed": "50 %", "Cohen's κ": "too few decisions to measure",
                       "Analysts vs gold": "100 %"}
    # Back to the overturned verdict: its history is shown; a changed mind is a new record.
    at.button(key="rv_prev").click().run()
    assert card(at).startswith("2/6 ")
    history = next(df.value for df in at.dataframe if "decision" in df.value.columns)
    assert history["note"].tolist() == ["premier credit is allowed <b>here</b>"]
    at.button(key="rv_confirm").click().run()
    assert [d.decision for d in decisions_for(db, "demo")] == ["confirm", "overturn", "confirm"]
    assert {m.label: m.value for m in at.metric}["Confirmed"] == "100 %"


def test_not_reviewed_filter_moves_the_next_verdict_up(db):
    at = open_page("bob")
    at.selectbox(key="rv_status").set_value("not reviewed by me").run()
    at.button(key="rv_confirm").click().run()
    assert card(at).startswith("1/5 · case mor-003-delay-premier-credit")
    at.text_input(key="rv_reviewer").set_value("cy").run()  # another analyst sees all six
    assert card(at).startswith("1/6 · case mor-001-delay-not-yet-late")
    at.button(key="rv_next").click().run()
    assert card(at).startswith("2/6 ")


def test_decisions_need_a_reviewer_name(db):
    at = open_page(reviewer=None)
    at.text_input(key="rv_reviewer").set_value("  ").run()
    assert any("Enter your name" in m.value for m in at.warning)
    assert at.button(key="rv_confirm").disabled and at.button(key="rv_overturn").disabled


def test_text_from_cases_and_models_is_shown_as_text(db):
    at = open_page()
    assert f"judge says True {INJECTION}" in [t.value for t in at.text]
    for el in list(at.markdown) + list(at.caption) + list(at.error) + list(at.success):
        assert "<img" not in el.value and "<script" not in el.value
    from components.key_help import _SCRIPT

    for el in at.get("html"):  # only the key legend and the key help are HTML, and ours
        body = el.proto.body
        assert "onerror" not in body and "alert(" not in body
        # The one script is the key help's own listener, never text of a case.
        assert body.replace(_SCRIPT.strip(), "").count("<script") == 0


def test_batch_audit_skips_what_the_run_already_holds(db):
    cases = load_cases(DEMO / "cases.jsonl")[:5]
    audit_repo.save_cases(db, "batch", cases, actor=COMMAND_LINE)
    index = AuditIndex(PolicyIndex.load(DEMO / "index.json"))
    done = [audit_case(c, index, "cdg", None, AuditOptions(judge_mode="none")) for c in cases[:2]]
    audit_repo.save_traces(db, done, "run-x", "batch", actor=COMMAND_LINE)
    at = open_page()
    run_batch_audit(at, "run-x", dataset="batch", judge="none")
    assert any("audited 3 cases (2 were already in the run), 0 judged" in plain(m.value) for m in at.success)
    stored = run_traces(db, "batch", ["run-x"])
    assert sorted(t.id for _r, t in stored) == sorted(c.id for c in cases)
    at.button(key="rv_audit_run").click().run()
    assert any("All 5 cases are already audited" in plain(m.value) for m in at.info)
    assert len(run_traces(db, "batch")) == 5
    # Contexts only: nothing to confirm, and the page says so.
    at.selectbox(key="rv_dataset").set_value("batch").run()
    assert "No judged verdict" in at.info[-1].value


@pytest.fixture
def merchant_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'merchant.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    config = tmp_path / "workbench.toml"
    config.write_text("")  # the default role settings the recordings were made with
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS",
                       str(ROOT / "fixtures" / "recordings" / "audit_merchant.jsonl"))
    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.load(ROOT / "fixtures" / "audit" / "merchant_index.json"),
                      actor=COMMAND_LINE)
    cases = [c for c in load_cases(ROOT / "fixtures" / "audit" / "merchant_cases.jsonl")
             if c.id == "merchant-delay-violation"]
    audit_repo.save_cases(eng, "merchant", cases, actor=COMMAND_LINE)
    yield eng
    eng.dispose()


def test_batch_audit_with_the_recorded_judge_feeds_the_queue(merchant_db):
    at = open_page()
    # The recordings were made with the first version's context form.
    run_batch_audit(at, "replayed", judge="whole", context="keyword seeds, full rules (v1)")
    assert any("1 judged" in m.value for m in at.success)
    [(run, trace)] = run_traces(merchant_db, "merchant")
    assert run == "replayed" and trace.verdict.violation is False  # the 1.5B judge misses it
    # The gold label says violation: the miss waits in the queue for an analyst.
    assert card(at) == "1/1 · case merchant-delay-violation · cdg · run replayed"
    why = next(t.value for t in at.text if t.value.startswith("In the queue because:"))
    assert "gold disagrees with the decision" in why
    at.text_input(key=note_key(at)).set_value("7-day tier paid for a 2-day delay")
    at.button(key="rv_overturn").click().run()
    [d] = decisions_for(merchant_db, "merchant")
    assert (d.decision, d.judge_violation, d.implied_violation) == ("overturn", False, True)
    assert (d.shown, d.analyst_label) == ("compliant", "violation")


def test_missing_recording_stops_the_run_with_advice(merchant_db, tmp_path, monkeypatch):
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(empty))
    at = open_page()
    run_batch_audit(at, judge="whole")
    assert "The run stopped after 0 of 1 cases" in plain(at.error[0].value)
    assert run_traces(merchant_db, "merchant") == []


def test_cases_and_traces_files_are_stored(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'files.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert "No audit traces yet" in at.info[-1].value
    # A broken cases file: nothing stored, the line is named.
    at.file_uploader(key="rv_cases_file").set_value(("bad.jsonl", b'{"id": "a"}\n', "text/plain"))
    at.text_input(key="rv_cases_name").set_value("mine")
    at.button(key="rv_cases_store").click().run()
    assert "bad.jsonl:1" in plain(at.error[0].value) and "model_response" in plain(at.error[0].value)
    lines = (DEMO / "cases.jsonl").read_text().splitlines()[:3]
    at.file_uploader(key="rv_cases_file").set_value(
        ("three.jsonl", "\n".join(lines).encode(), "text/plain"))
    at.button(key="rv_cases_store").click().run()
    assert any("Stored 3 cases as dataset mine" in plain(m.value) for m in at.success)
    # Traces: two good lines and one that is not a trace.
    ids = [json.loads(line)["id"] for line in lines]
    traces = [{"id": ids[0], "strategy": "cdg", "verdict": {"violation": True, "reason": "r",
                                                             "violated_rules": []}},
              {"id": ids[1], "strategy": "cdg", "verdict": None}]
    text = "\n".join([json.dumps(traces[0]), "oops", json.dumps(traces[1])])
    at.file_uploader(key="rv_traces_file").set_value(("judge-a.jsonl", text.encode(), "text/plain"))
    at.text_input(key="rv_traces_dataset").set_value("mine")
    at.button(key="rv_traces_store").click().run()
    assert any("1 line(s) skipped: judge-a.jsonl:2: not valid JSON" in plain(m.value) for m in at.warning)
    assert any("Stored 2 traces as run judge-a of dataset mine" in plain(m.value) for m in at.success)
    eng = make_engine(url)
    assert [(r, t.id) for r, t in run_traces(eng, "mine")] == [("judge-a", ids[0]), ("judge-a", ids[1])]
    eng.dispose()
    at.run()
    assert card(at) == f"1/1 · case {ids[0]} · cdg · run judge-a"


def test_a_key_press_does_not_load_the_traces_cases_or_index_again(db, monkeypatch):
    """The queue's next/decide keys rerun the page; the stored traces, cases and policy index
    come from the cache (keyed by the data version) instead of the database each time."""
    from store import repo as store_repo

    calls = {"traces": 0, "cases": 0, "index": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(audit_repo, "run_traces", counted("traces", audit_repo.run_traces))
    monkeypatch.setattr(audit_repo, "load_cases", counted("cases", audit_repo.load_cases))
    monkeypatch.setattr(store_repo, "export_index", counted("index", store_repo.export_index))
    at = open_page()
    first = card(at)
    loaded = dict(calls)
    assert loaded["traces"] >= 1 and loaded["cases"] >= 1
    at.button(key="rv_next").click().run()  # the "j" key
    assert not at.exception and card(at) != first and card(at).startswith("2/")
    at.button(key="rv_confirm").click().run()  # the "y" key: a decision is stored
    assert not at.exception and card(at).startswith("3/")
    assert len(decisions_for(db, "demo")) == 1
    queued = int(card(at).split(" ")[0].split("/")[1])
    assert calls == loaded  # nothing reloaded on either key
    # A trace stored meanwhile (here, by another process) shows at the next rerun.
    audit_repo.save_traces(db, [AuditTrace(id="mor-001-delay-not-yet-late", strategy="bm25",
                                           verdict=Verdict(True, "new", []))], "run-new", "demo",
                           actor=COMMAND_LINE)
    at.run()
    assert calls["traces"] == loaded["traces"] + 1
    assert card(at).startswith(f"3/{queued + 1} ")  # the new flagged verdict joined the queue
