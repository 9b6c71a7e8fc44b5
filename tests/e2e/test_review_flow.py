"""An analyst in the review queue, in real Chromium against a real server: confirm a flagged
verdict with one key, overturn another with a typed note, and find both decisions in the
database. Model text carrying markup shows as text and runs nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import ROOT, demo_index, make_server, wait_idle
from .flows import submit

pytestmark = pytest.mark.e2e

INJECTION = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'
VERDICTS = {  # hand-set judge verdicts (violation?) of a cdg run; gold in the demo cases
    "mor-001-delay-not-yet-late": True,       # gold violation: flagged
    "mor-003-delay-premier-credit": True,     # gold compliant: flagged and a gold mismatch
    "air-001-compensation-regular-economy": False,  # gold violation: a gold mismatch
}

def seed_review(db_url: str) -> None:
    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case, load_cases
    from workbench.graph import PolicyIndex

    eng = make_engine(db_url)
    cases = [c for c in load_cases(ROOT / "fixtures" / "demo" / "cases.jsonl") if c.id in VERDICTS]
    audit_repo.save_cases(eng, "demo", cases)
    index = AuditIndex(PolicyIndex.from_dict(demo_index()))
    traces = []
    for case in cases:
        t = audit_case(case, index, "cdg", None, AuditOptions(judge_mode="none"))
        t.judge_mode = "whole"
        t.verdict = Verdict(VERDICTS[case.id], f"judge on {case.id}: {INJECTION}", [])
        traces.append(t)
    audit_repo.save_traces(eng, traces, "run-1", "demo")
    eng.dispose()


@pytest.fixture
def server(tmp_path):
    srv = make_server(tmp_path, demo_index())
    seed_review(srv.db_url)
    yield srv
    srv.stop()


def expect_card(page, text: str) -> None:
    page.locator(".st-key-rv_card", has_text=text).wait_for(timeout=30_000)
    wait_idle(page)


def leave_fields(page) -> None:
    """Take the focus out of any text field, so the next key is a shortcut, not typing."""
    page.evaluate("document.activeElement && document.activeElement.blur()")


def test_confirm_by_key_and_overturn_with_a_note(server, page):
    page.goto(f"{server.url}/review")
    wait_idle(page)
    submit(page, "Reviewer", "ada")
    expect_card(page, "1/3 · case mor-001-delay-not-yet-late")
    legend = page.locator("[data-testid='wb-key-legend']")
    # expect() polls: right after a rerun the previous run's legend can still be on screen.
    for word in ("confirm", "overturn", "next", "previous"):
        expect(legend.get_by_text(word)).to_have_count(1, timeout=30_000)
    # The judge's reason with markup is shown as text, and its markup never ran.
    page.get_by_text("judge on mor-001-delay-not-yet-late: <img src=x").wait_for()
    assert page.locator("img[src='x']").count() == 0
    assert page.evaluate("window.__pwned") is None

    leave_fields(page)
    page.keyboard.press("y")  # confirm
    expect_card(page, "2/3 · case mor-003-delay-premier-credit")
    # A note typed key by key: letters that are shortcuts (y, n, j, k) stay in the field.
    note = page.get_by_label("Note (required to overturn)")
    note.click()
    page.keyboard.type("policy says yes: Premier credit, jolly okay")
    page.keyboard.press("Tab")  # commits the note
    wait_idle(page)
    expect_card(page, "2/3 ")
    leave_fields(page)
    page.keyboard.press("n")  # overturn
    expect_card(page, "3/3 · case air-001-compensation-regular-economy")
    page.get_by_text("2 of 3 reviewed (2 by you)").wait_for()
    page.keyboard.press("k")  # back: the decision is listed under the verdict
    expect_card(page, "2/3 ")
    # (a data grid drawn on a canvas: its cells are in the DOM for accessibility only)
    page.locator("[data-testid='stDataFrame'] td", has_text="jolly okay").first.wait_for(
        state="attached")
    assert page.evaluate("window.__pwned") is None
    assert page.external_requests == []

    from store.db import make_engine
    from store.review import decisions_for

    eng = make_engine(server.db_url)
    stored = [(d.reviewer, d.run_id, d.case_id, d.strategy, d.decision, d.note, d.judge_violation)
              for d in decisions_for(eng, "demo")]
    eng.dispose()
    assert stored == [
        ("ada", "run-1", "mor-001-delay-not-yet-late", "cdg", "confirm", "", True),
        ("ada", "run-1", "mor-003-delay-premier-credit", "cdg", "overturn",
         "policy says yes: Premier credit, jolly okay", True),
    ]
