"""Replay's re-run is a preview (issue #16, item 2): it says what it will do, shows "stored"
vs "new" with the differences, and stores nothing until "Store this result" — then into a
run of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from components.rerun_preview import plan_text, planned_calls, trace_diff
from store import audit_repo
from workbench.audit import AuditIndex, AuditOptions, AuditTrace, Verdict, audit_case

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "replay.py")


def test_planned_calls_count_keyword_and_judge_calls():
    assert planned_calls(["cdg"], "lexical", "none") == 0
    assert planned_calls(["cdg", "raw"], "lexical", "whole") == 2
    assert planned_calls(["cdg", "raw"], "llm", "whole") == 4
    assert planned_calls(["cdg"], "lexical", "per-rule", {"cdg": 7}) == 7
    text = plan_text(["cdg", "raw"], "lexical", "whole", 2)
    assert "cdg and raw" in text and "2 model call(s)" in text and "6 min" in text
    assert "nothing is stored" in text


def test_trace_diff_names_what_changed():
    old = AuditTrace("c", "cdg", verdict=Verdict(True, "", ["R1"]), closure={"s": ["R1", "R2"]},
                     context_tokens=100)
    new = AuditTrace("c", "cdg", verdict=Verdict(False, "", []), closure={"s": ["R1"]},
                     context_tokens=60)
    assert trace_diff(old, new) == ["Verdict: violation → compliant", "No longer cited: R1",
                                    "Closure lost 1 rule(s): s/R2", "Context tokens: 100 → 60"]
    assert trace_diff(old, old) == []
    assert trace_diff(None, new) == ["Verdict: nothing stored → compliant"]


@pytest.fixture
def db(demo_db):
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    trace.verdict = Verdict(True, "stored reason", [trace.closure["merchant-order-refund"][0]])
    audit_repo.save_trace(eng, trace, run_id="batch-1", dataset="demo")
    return eng, case


def test_rerun_is_a_preview_until_stored_into_its_own_run(db):
    eng, case = db
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"dataset": "demo", "case": case.id})
    at.run()
    at.selectbox(key="replay_judge").set_value("none").run()
    assert any("nothing is stored" in c.value for c in at.caption)
    at.button(key="replay_run").click().run()
    assert not at.exception
    # Nothing written yet; the stored verdict is still the one shown, the new one beside it.
    assert [r for r, _ in _runs(eng, case.id)] == ["batch-1"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Stored"] == "violation" and metrics["New (not stored)"] == "not judged"
    assert any("Verdict: violation → not judged" in t.value for t in at.text)
    assert [e.value for e in at.error][:1] == ["Violation"]  # the stored card, unchanged

    at.button(key="preview_store_cdg").click().run()
    assert not at.exception
    runs = [r for r, _ in _runs(eng, case.id)]
    assert runs[0] == "batch-1" and len(runs) == 2
    assert runs[1].startswith(f"replay-{case.id}-cdg-")  # its own run, not "batch-1"
    assert any("Stored the new cdg result" in s.value for s in at.success)
    assert not [m for m in at.metric if m.label == "Stored"]  # the preview is gone


def _runs(eng, case_id):
    from store import audit_repo

    return [(r, t) for r, t in audit_repo.run_traces(eng, "demo") if t.id == case_id]


@pytest.mark.parametrize("role,may_store", [("annotator", False), ("analyst", True)])
def test_only_a_role_that_stores_audit_results_gets_store_this_result(db, role, may_store):
    """Issue #16: an annotator previews a re-run but gets no "Store this result", only the
    reason; an analyst (the positive control) gets the button."""
    eng, case = db
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["identity"] = {"name": f"the {role}", "role": role}
    at.query_params.update({"dataset": "demo", "case": case.id})
    at.run()
    at.selectbox(key="replay_judge").set_value("none").run()
    at.button(key="replay_run").click().run()
    assert not at.exception
    assert [m.label for m in at.metric if m.label == "New (not stored)"] == ["New (not stored)"]
    assert any(b.key == "preview_store_cdg" for b in at.button) is may_store
    refusal = any("store audit results you need the role" in i.value for i in at.info)
    assert refusal is not may_store
