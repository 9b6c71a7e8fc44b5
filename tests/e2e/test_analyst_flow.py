"""A compliance analyst in real Chromium against a real server: replay a demo case whose
stored trace holds a violation verdict, see the verdict, the judge's reason and the violated
rule's source span highlighted, then confirm that verdict in the review queue with one key
and find the decision in the database."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from workbench.audit import AuditTrace
from workbench.identity.roles import COMMAND_LINE
from workbench.words import gold_word

from .flows import (
    DEMO,
    assert_no_exception,
    choose,
    demo_cases,
    demo_index_data,
    goto,
    import_index,
    start_server,
    submit,
)
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

RUN = "demo-cdg"


def violation_trace(index: dict, case_ids: set[str]) -> AuditTrace:
    """The first recorded cdg trace of the embedded judge (``fixtures/demo/traces_cdg.jsonl``)
    that finds a violation and cites a rule of the demo index; without one (the recording
    not there yet), a trace of mor-002 with a hand-set verdict citing a closure rule."""
    rules = {r["id"] for s in index["skills"] for r in s["rules"]}
    path = DEMO / "traces_cdg.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            trace = json.loads(line) if line.strip() else {}
            verdict = trace.get("verdict") or {}
            if (verdict.get("violation") and trace.get("id") in case_ids
                    and set(verdict.get("violated_rules") or []) & rules):
                return AuditTrace.from_dict(trace)
    from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case
    from workbench.graph import PolicyIndex

    case = next(c for c in demo_cases() if c.id.startswith("mor-002"))
    trace = audit_case(case, AuditIndex(PolicyIndex.from_dict(index)), "cdg", None,
                       AuditOptions(judge_mode="none"))
    cited = trace.closure["merchant-order-refund"][0]
    trace.judge_mode = "whole"
    trace.verdict = Verdict(True, f"{cited} is violated: the coupon share was not deducted.", [cited])
    return trace


def seed_demo(eng, index: dict, cases, trace: AuditTrace) -> None:
    """The demo index and cases, and ``trace`` stored in run ``RUN``."""
    from store import audit_repo

    import_index(eng, index, author="demo")
    audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
    audit_repo.save_trace(eng, trace, RUN, "demo", actor=COMMAND_LINE)


@pytest.fixture
def flow(tmp_path):
    index = demo_index_data()
    cases = demo_cases()
    trace = violation_trace(index, {c.id for c in cases})

    srv = start_server(tmp_path, lambda eng: seed_demo(eng, index, cases, trace))
    case = next(c for c in cases if c.id == trace.id)
    yield srv, trace, case, index
    srv.stop()


def cited_span_text(index: dict, trace: AuditTrace) -> str:
    rid = trace.verdict.violated_rules[0]
    for skill in index["skills"]:
        for rule in skill["rules"]:
            if rule["id"] == rid:
                span = rule["spans"][0]
                return skill["source"][span["start"]:span["end"]]
    raise AssertionError(f"{rid} is not in the demo index")


def words(text: str) -> str:
    return " ".join(text.split())


def test_replay_a_violation_then_confirm_it_in_the_queue(flow, page):
    server, trace, case, index = flow
    verdict = trace.verdict
    rid = verdict.violated_rules[0]

    # -- replay ---------------------------------------------------------------------------
    goto(page, server, "replay")
    choose(page, "Case", f"{case.id} — gold: {gold_word(case.label)}")
    card = screen(page).locator(".st-key-verdict_a")
    expect(card.locator("[data-testid='stAlertContentError'] p")).to_have_text("Violation")
    expect(card).to_contain_text(verdict.reason)
    expect(card).to_contain_text(f"Violated rule {rid}")
    # The cited rule's source span is highlighted in the SKILL text, in the card.
    mark = card.locator("[data-testid='wb-source'] mark").first
    expect(mark).to_be_visible()
    assert words(mark.inner_text()) == words(cited_span_text(index, trace))
    # The stored trace is replayed, not re-run: the button offers a re-run.
    expect(screen(page).get_by_role("button", name="Re-run audit")).to_be_visible()
    assert_no_exception(page, server)

    # -- confirm in the review queue ------------------------------------------------------------
    goto(page, server, "review")
    submit(page, "Reviewer", "ada")
    card = screen(page).locator(".st-key-rv_card")
    expect(card).to_contain_text(f"1/1 · case {case.id} · cdg · run {RUN}")
    shown(page, lambda s: s.get_by_text("0 of 1 reviewed (0 by you)"))
    # Keys act only outside text fields.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("y")
    shown(page, lambda s: s.get_by_text("1 of 1 reviewed (1 by you)"), timeout=30_000)
    shown(page, lambda s: s.get_by_text(f"Confirmed the cdg verdict on {case.id}."))
    idle(page)
    assert_no_exception(page, server)
    assert page.external_requests == []

    from store.db import make_engine
    from store.review import decisions_for

    eng = make_engine(server.db_url)
    try:
        stored = [(d.reviewer, d.run_id, d.case_id, d.strategy, d.decision, d.note,
                   d.judge_violation) for d in decisions_for(eng, "demo")]
    finally:
        eng.dispose()
    assert stored == [("ada", RUN, case.id, "cdg", "confirm", "", True)]
