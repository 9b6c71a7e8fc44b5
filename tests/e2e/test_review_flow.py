"""An analyst in the review queue, in real Chromium against a real server: confirm a flagged
verdict with one key, overturn another with a typed note, and find both decisions in the
database. Model text carrying markup shows as text and runs nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .review_queue import expect_card, leave_fields, open_queue, review_fixture, seed_verdicts, type_note
from .screen import screen, shown

pytestmark = pytest.mark.e2e

INJECTION = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'
VERDICTS = {  # hand-set judge verdicts (violation?) of a cdg run; gold in the demo cases
    "mor-001-delay-not-yet-late": True,       # gold violation: flagged
    "mor-003-delay-premier-credit": True,     # gold compliant: flagged and a gold mismatch
    "air-001-compensation-regular-economy": False,  # gold violation: a gold mismatch
}


def seed_review(db_url: str) -> None:
    from workbench.audit import Verdict

    def verdict(case, trace):
        return Verdict(VERDICTS[case.id], f"judge on {case.id}: {INJECTION}", [])

    seed_verdicts(db_url, VERDICTS, verdict)


server = review_fixture(seed_review)


def test_confirm_by_key_and_overturn_with_a_note(server, page):
    open_queue(page, server, "", "1/3 · case mor-001-delay-not-yet-late")
    legend = screen(page).locator("[data-testid='wb-key-legend']")
    # expect() polls: right after a rerun the previous run's legend can still be on screen.
    for word in ("confirm", "overturn", "next", "previous"):
        expect(legend.get_by_text(word)).to_have_count(1, timeout=30_000)
    # The judge's reason with markup is shown as text, and its markup never ran.
    shown(page, lambda s: s.get_by_text("judge on mor-001-delay-not-yet-late: <img src=x"))
    assert screen(page).locator("img[src='x']").count() == 0
    assert screen(page).evaluate("window.__pwned") is None

    leave_fields(page)
    page.keyboard.press("y")  # confirm
    expect_card(page, "2/3 · case mor-003-delay-premier-credit")
    # A note typed key by key: letters that are shortcuts (y, n, j, k) stay in the field.
    type_note(page, "policy says yes: Premier credit, jolly okay")
    expect_card(page, "2/3 ")
    leave_fields(page)
    page.keyboard.press("n")  # overturn
    expect_card(page, "3/3 · case air-001-compensation-regular-economy")
    shown(page, lambda s: s.get_by_text("2 of 3 reviewed (2 by you)"))
    page.keyboard.press("k")  # back: the decision is listed under the verdict
    expect_card(page, "2/3 ")
    # (a data grid drawn on a canvas: its cells are in the DOM for accessibility only)
    shown(page, lambda s: s.locator("[data-testid='stDataFrame'] td", has_text="jolly okay"))
    assert screen(page).evaluate("window.__pwned") is None
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
