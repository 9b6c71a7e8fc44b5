"""Replay's re-run is a preview (issue #16, item 2): it says what it will do, shows "stored"
vs "new" with the differences, and stores nothing until "Store this result" — then into a
run of its own."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.rerun_preview import trace_diff
from store import audit_repo
from tests.test_page_replay import replay_link
from workbench.audit import AuditIndex, AuditOptions, AuditTrace, Verdict, audit_case
from workbench.identity.roles import COMMAND_LINE


def test_trace_diff_names_what_changed():
    old = AuditTrace("c", "cdg", verdict=Verdict(True, "", ["R1"]), closure={"s": ["R1", "R2"]},
                     context_tokens=100)
    new = AuditTrace("c", "cdg", verdict=Verdict(False, "", []), closure={"s": ["R1"]},
                     context_tokens=60)
    assert trace_diff(old, new) == ["Verdict: violation → compliant", "No longer cited: R1",
                                    "Closure lost 1 rule: s/R2", "Context tokens: 100 → 60"]
    assert trace_diff(old, old) == []
    assert trace_diff(None, new) == ["Verdict: nothing stored → compliant"]


@pytest.fixture
def db(demo_db):
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    trace.verdict = Verdict(True, "stored reason", [trace.closure["merchant-order-refund"][0]])
    audit_repo.save_trace(eng, trace, run_id="batch-1", dataset="demo", actor=COMMAND_LINE)
    return eng, case


def test_a_rerun_without_a_judge_is_a_preview_that_cannot_be_stored(db):
    """Issue #35: storing a no-judge re-run made the case show "not judged" over its judged
    trace and put a one-case run with ACC 0.000 on Evaluate. It stays a preview."""
    eng, case = db
    at = replay_link(case.id, timeout=120)
    at.selectbox(key="replay_judge").set_value("none").run()
    assert any("nothing is stored" in c.value or "no verdict to store" in c.value
               for c in at.caption)
    at.button(key="replay_run").click().run()
    assert not at.exception
    # The stored verdict is still the one shown, the new one beside it, and no Store button.
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Stored"] == "violation" and metrics["New (not stored)"] == "not judged"
    assert any("Verdict: violation → not judged" in t.value for t in at.text)
    assert [e.value for e in at.error][:1] == ["Violation"]  # the stored card, unchanged
    assert not [b for b in at.button if b.key == "preview_store_cdg"]
    assert any("Nothing to store: it was run without a judge" in c.value.replace("\\", "")
               for c in at.caption)
    assert [r for r, _ in _runs(eng, case.id)] == ["batch-1"]


@pytest.fixture
def fake_judge(monkeypatch):
    """The judge role pointed at an OpenAI-compatible test server (no model behind it): the
    real gateway, litellm and HTTP, answering with a scripted verdict."""
    from workbench.llm.fake_server import FakeChatServer, reply, role_env

    verdict = {"violation": False, "violated_rules": [], "evidence": [], "reason": "No rule is broken."}
    with FakeChatServer(default=reply(verdict, prompt_tokens=900, completion_tokens=40)) as srv:
        for name, value in role_env(srv.api_base, role="judge").items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("WORKBENCH_LLM_MODE", raising=False)
        yield srv


def judged_preview(case, identity: dict | None = None) -> AppTest:
    at = replay_link(case.id, timeout=120, identity=identity)
    at.selectbox(key="replay_judge").set_value("whole").run()
    at.button(key="replay_run").click().run()
    assert not at.exception
    return at


def test_a_judged_rerun_is_stored_into_its_own_run_with_its_settings(db, fake_judge):
    eng, case = db
    at = judged_preview(case)
    assert len(fake_judge.requests) == 1
    assert {m.label: m.value for m in at.metric}["New (not stored)"] == "compliant"
    at.button(key="preview_store_cdg").click().run()
    assert not at.exception
    runs = [r for r, _ in _runs(eng, case.id)]
    assert runs[0] == "batch-1" and len(runs) == 2
    assert runs[1].startswith(f"replay-{case.id}-cdg-")  # its own run, not "batch-1"
    assert any("Stored the new cdg result" in s.value for s in at.success)
    assert not [m for m in at.metric if m.label == "Stored"]  # the preview is gone
    # The page says how the shown (new) trace was made: the settings it recorded.
    shown = "\n".join(c.value.replace("\\", "") for c in at.caption)
    assert "Audited with cdg · judge: one verdict over the whole context" in shown
    assert "judge model: openai/fake-model" in shown and "seeding: scored" in shown


def _runs(eng, case_id):
    from store import audit_repo

    return [(r, t) for r, t in audit_repo.run_traces(eng, "demo") if t.id == case_id]


@pytest.mark.parametrize("role,may_store", [("annotator", False), ("analyst", True)])
def test_only_a_role_that_stores_audit_results_gets_store_this_result(db, fake_judge, role,
                                                                     may_store):
    """Issue #16: an annotator previews a re-run but gets no "Store this result", only the
    reason; an analyst (the positive control) gets the button."""
    eng, case = db
    at = judged_preview(case, {"name": f"the {role}", "role": role})
    assert [m.label for m in at.metric if m.label == "New (not stored)"] == ["New (not stored)"]
    assert any(b.key == "preview_store_cdg" for b in at.button) is may_store
    refusal = any("store audit results you need the role" in i.value for i in at.info)
    assert refusal is not may_store


def test_a_newer_contexts_only_trace_does_not_hide_the_judged_one(db):
    """Stored by a batch or the command line (`--judge none`): Replay keeps showing the
    judged verdict, says the newer trace exists, and a link pinned to its run shows it."""
    eng, case = db
    context_only = audit_case(case, AuditIndex(_index(eng)), "cdg", None,
                              AuditOptions(judge_mode="none"))
    audit_repo.save_trace(eng, context_only, run_id="contexts-1", dataset="demo", actor=COMMAND_LINE)
    at = replay_link(case.id, timeout=120)
    assert not at.exception
    assert [e.value for e in at.error][:1] == ["Violation"]
    shown = "\n".join(c.value.replace("\\", "") for c in at.caption)
    assert "A newer trace of cdg without a verdict (run contexts-1, contexts only)" in shown
    pinned = replay_link(case.id, timeout=120, run="contexts-1")
    assert any("Not judged" in i.value for i in pinned.info)


def _index(eng):
    from store import repo

    return repo.export_index(eng, repo.skill_names(eng))
