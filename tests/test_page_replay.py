"""Replay page, headless: stored traces shown with verdict and spans; runs without a judge;
bad pasted cases explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo
from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
PAGE = str(ROOT / "pages" / "replay.py")


def replay_link(case_id: str, *, timeout: float = 60, identity: dict | None = None,
                **more: str) -> AppTest:
    """Replay opened from a link to ``case_id`` of dataset demo (``?dataset=demo&case=...``
    and ``more`` parameters), run once; ``identity``: who is signed in."""
    at = AppTest.from_file(PAGE, default_timeout=timeout)
    if identity is not None:
        at.session_state["identity"] = identity
    at.query_params.update({"dataset": "demo", "case": case_id, **more})
    return at.run()


@pytest.fixture
def db(demo_db):
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    # A hand-set verdict (the judge is not what this page test is about).
    cited = trace.closure["merchant-order-refund"][0]
    trace.verdict = Verdict(True, f"{cited} is violated: the coupon share was not deducted.", [cited])
    audit_repo.save_trace(eng, trace, run_id="t", dataset="demo", actor=COMMAND_LINE)
    return eng, case, cited


def test_replay_shows_stored_verdict_with_span(db):
    _, case, cited = db
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    at.selectbox(key="replay_case").set_value(case.id).run()
    assert not at.exception
    assert [e.value for e in at.error][:1] == ["Violation"]
    texts = [t.value for t in at.text]
    assert any("coupon share was not deducted" in t for t in texts)
    assert any(cited in m.value.replace("\\", "") for m in at.markdown)  # ids are md-escaped
    assert any("Rendered context" in m.value for m in at.markdown)


def test_replay_runs_without_judge_and_compares(db):
    _, case, _ = db
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.selectbox(key="replay_case").set_value(case.id)
    at.selectbox(key="replay_judge").set_value("none")
    at.selectbox(key="replay_b").set_value("raw").run()
    at.button(key="replay_run").click().run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert labels.count("Context tokens") == 2
    raw_tokens = [m.value for m in at.metric if m.label == "Context tokens"][1]
    assert int(raw_tokens) > 5000  # raw = the whole merchant SKILL


def test_pasted_case_errors_are_explained(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="replay_dataset").set_value("(paste a case)").run()
    at.text_area(key="replay_paste").set_value(json.dumps({"id": "x"})).run()
    assert "cannot be used" in at.error[0].value


def test_replay_shows_a_case_judged_in_parts(demo_db):
    from workbench.audit.trace import JudgedPart, WindowFit

    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    ids = trace.closure["merchant-order-refund"]
    trace.window = WindowFit(1400, "[roles.judge] context_window", 64, 600, 590, "grouped",
                             turns_total=9, turns_dropped=4, tokens_dropped=812)
    trace.parts = [JudgedPart(1, "whole", ids[:2], 400, False, [], "fine"),
                   JudgedPart(2, "whole", ids[2:], 500, True, [ids[-1]], f"breaks [{ids[-1]}]")]
    trace.verdict = Verdict(True, f"Part 2/2: breaks [{ids[-1]}]", [ids[-1]])
    audit_repo.save_trace(eng, trace, run_id="t", dataset="demo", actor=COMMAND_LINE)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="replay_case").set_value(case.id).run()
    assert not at.exception
    assert any("Judged in 2 parts" in m.value for m in at.markdown)
    assert any("Judged in 2 parts" in c.value for c in at.caption)  # on the verdict card
    assert any("4 oldest of 9 turns" in w.value for w in at.warning)
    parts = next(d.value for d in at.dataframe if "part" in d.value.columns)
    assert list(parts["verdict"]) == ["compliant", "violation"]
    assert list(parts["violated"]) == ["", ids[-1]]


def test_violated_rule_links_to_its_graph_view(db):
    _, case, cited = db
    at = replay_link(case.id)
    assert not at.exception
    link = f"(/graph?skill=merchant-order-refund&rule={cited})"
    assert any(m.value.startswith("**Violated rule [") and link in m.value for m in at.markdown)


def test_replay_says_why_each_rule_is_in_context(demo_db):
    """For every rule in context, its require path from the seed that brought it, as plain
    text (policy ids shown as they are); a trace stored before paths were kept says so."""
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    paths = trace.closure_paths["merchant-order-refund"]
    deep = next(rid for rid, p in paths.items() if len(p) > 1)
    audit_repo.save_trace(eng, trace, run_id="t", dataset="demo", actor=COMMAND_LINE)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="replay_case").set_value(case.id).run()
    assert not at.exception
    assert any(m.value.startswith("**Why each rule is in context**") for m in at.markdown)
    (block,) = [t.value for t in at.text if t.value.startswith("merchant-order-refund\n")]
    lines = block.splitlines()[1:]
    assert len(lines) == len(trace.closure["merchant-order-refund"])
    assert f"  {deep}: seed " + " → ".join(paths[deep]) in lines
    listed = next(d.value for d in at.dataframe if "why in context" in d.value.columns)
    assert list(listed["why in context"]) == ["seed " + " → ".join(paths[r]) for r in listed["rule"]]

    trace.closure_paths = {}  # as a trace written before the field existed reads
    audit_repo.save_trace(eng, trace, run_id="u", dataset="demo", actor=COMMAND_LINE)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="replay_case").set_value(case.id).run()
    assert not at.exception
    (block,) = [t.value for t in at.text if t.value.startswith("merchant-order-refund\n")]
    assert "not recorded (audited before paths were kept)" in block


def test_a_gold_label_that_disagrees_is_a_warning_and_compliant_evidence_is_not_red(demo_db):
    """Issue 44 item 5: a green card over a gold violation says so prominently, and the
    words a compliant decision rests on are marked in a neutral colour."""
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id == "mor-001-delay-not-yet-late")
    assert case.label == "negative"
    trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    quote = case.model_response[:30]
    trace.verdict = Verdict(False, "complies", [], probability=0.1, probability_source="logprobs",
                            evidence=[{"start": 0, "end": 30, "quote": quote}])
    audit_repo.save_trace(eng, trace, run_id="t", dataset="demo", actor=COMMAND_LINE)
    at = replay_link(case.id)
    assert not at.exception
    assert [s.value for s in at.success][:1] == ["Compliant"]
    assert "Gold label: violation — the verdict says compliant" in [w.value for w in at.warning]
    html = " ".join(e.proto.body for e in at.get("html"))
    assert 'data-kind="compliant"' in html and 'class="wb-compliant"' in html
    assert 'class="wb-violation"' not in html
