"""The Review queue in real Chromium (issue #35 item 6): a pasted ``?case=`` link opens that
verdict, a search filter is kept in the address across a reload, the three-way decision and
its undo by key, the ``?`` keyboard help, and agreement shown in words."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .review_queue import expect_card, leave_fields, open_queue, review_fixture, type_note
from .screen import idle, screen, shown
from .test_review_flow import seed_review

pytestmark = pytest.mark.e2e

PREMIER = "mor-003-delay-premier-credit"
BANDS = "poor|slight|fair|moderate|substantial|almost perfect"


server = review_fixture(seed_review)


def _decisions(server):
    from store.db import make_engine
    from store.review import decisions_for

    eng = make_engine(server.db_url)
    try:
        return [(d.case_id, d.decision, d.note, d.undoes is not None)
                for d in decisions_for(eng, "demo")]
    finally:
        eng.dispose()


def test_a_case_link_and_a_search_survive_a_reload(server, page):
    open_queue(page, server, f"?dataset=demo&case={PREMIER}", f"2/3 · case {PREMIER}")
    search = screen(page).get_by_role("textbox", name="Search")
    search.fill("premier")
    search.press("Enter")
    idle(page)
    expect_card(page, f"1/1 · case {PREMIER}")
    expect(page).to_have_url(re.compile(r"[?&]q=premier(&|$)"), timeout=30_000)
    expect(page).to_have_url(re.compile(rf"[?&]case={PREMIER}(&|$)"), timeout=30_000)
    page.reload()
    idle(page)
    # A new session from the address alone: the search box, the filtered queue, the case.
    expect(screen(page).get_by_role("textbox", name="Search")).to_have_value("premier", timeout=30_000)
    expect_card(page, f"1/1 · case {PREMIER}")
    assert page.external_requests == []


def test_wrong_rule_by_key_then_undo_by_key(server, page):
    open_queue(page, server, "?dataset=demo", "1/3 · case mor-001-delay-not-yet-late")
    leave_fields(page)
    page.keyboard.press("w")  # "wrong rule" without a note: refused beside the buttons
    refusal = shown(page, lambda s: s.get_by_text("needs a note naming the rule"))
    buttons = screen(page).get_by_role("button", name="Wrong rule").bounding_box()
    said = refusal.bounding_box()
    assert 0 < said["y"] - buttons["y"] < 200  # right under the buttons, not at the top
    type_note(page, "MOR-R003 is the rule broken")
    leave_fields(page)
    page.keyboard.press("w")
    expect_card(page, f"2/3 · case {PREMIER}")
    undo = screen(page).get_by_role("button", name=re.compile("Undo: right verdict, wrong rule"))
    expect(undo).to_be_visible(timeout=30_000)
    assert _decisions(server) == [("mor-001-delay-not-yet-late", "wrong-rule",
                                   "MOR-R003 is the rule broken", False)]
    leave_fields(page)
    page.keyboard.press("u")
    expect_card(page, "1/3 · case mor-001-delay-not-yet-late")  # back to the undone verdict
    shown(page, lambda s: s.get_by_text("Undone: right verdict, wrong rule"), timeout=30_000)
    expect(screen(page).get_by_role("button", name="Undo (nothing to undo)")).to_be_disabled()
    assert [d[1] for d in _decisions(server)] == ["wrong-rule", "undo"]


def test_question_mark_shows_every_key_and_agreement_reads_in_words(server, page):
    open_queue(page, server, "?dataset=demo", "1/3 ")
    leave_fields(page)
    page.keyboard.press("?")
    overlay = screen(page).get_by_test_id("wb-key-help")
    expect(overlay).to_be_visible()
    for words in ("confirm the verdict", "right verdict, wrong rule cited", "undo your last decision",
                  "next verdict", "show or hide this help"):
        expect(overlay.get_by_text(words)).to_be_visible()
    page.keyboard.press("Escape")
    expect(overlay).to_have_count(0)
    screen(page).get_by_test_id("wb-key-help-open").click()  # the button opens it too
    expect(overlay).to_be_visible()
    page.keyboard.press("?")
    expect(overlay).to_have_count(0)
    # Two decisions: too few for Cohen's kappa to mean anything, and the metric says so in
    # words (a "0.00 (slight)" after one decision read as a finding).
    page.keyboard.press("y")
    expect_card(page, "2/3 ")
    type_note(page, "premier credit is allowed")
    leave_fields(page)
    page.keyboard.press("n")
    shown(page, lambda s: s.get_by_text("2 of 3 reviewed (2 by you)"), timeout=30_000)
    kappa = screen(page).get_by_test_id("stMetric").filter(has_text="Cohen's κ")
    expect(kappa).to_contain_text("too few decisions to measure", timeout=30_000)
    expect(kappa).to_contain_text("only 2 decisions so far")
    assert page.external_requests == []
