"""Verdicts an analyst can trust, in real Chromium: Replay shows the violation probability in
words and marks the words of the reply the verdict rests on; Review puts the most doubtful
verdict first when sorted by uncertainty."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .review_queue import expect_card, leave_fields, open_queue, review_fixture, seed_verdicts
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

# case -> (violation?, probability, a sentence of its reply to cite as evidence)
JUDGED = {
    "mor-001-delay-not-yet-late": (True, 0.95, "your order is running late"),
    "mor-003-delay-premier-credit": (True, 0.55, "so it is 9 days late"),
    "air-001-compensation-regular-economy": (False, 0.1, None),
}


def seed(db_url: str) -> None:
    from workbench.audit import Verdict
    from workbench.audit.evidence import locate_quotes

    def verdict(case, trace):
        violation, p, quote = JUDGED[case.id]
        cited = trace.units[:1] if violation else []
        return Verdict(violation, "hand-set verdict", cited, probability=p,
                       probability_source="logprobs",
                       evidence=locate_quotes(case.model_response, [quote]) if quote else [])

    seed_verdicts(db_url, JUDGED, verdict)


server = review_fixture(seed)


def test_replay_shows_the_probability_and_marks_the_reply_sentence(server, page):
    page.goto(f"{server.url}/replay?dataset=demo&case=mor-001-delay-not-yet-late")
    idle(page)
    shown(page, lambda s: s.get_by_text("likely violation — 95 % (uncalibrated)"), timeout=60_000)
    mark = screen(page).get_by_test_id("wb-evidence").locator("mark")
    expect(mark).to_have_count(1, timeout=30_000)
    expect(mark).to_have_text("your order is running late")
    assert page.external_requests == []


def test_review_sorted_by_uncertainty_shows_the_most_doubtful_verdict_first(server, page):
    # Confidence at 0.5: 0.55 for mor-003, 0.90 for air-001, 0.95 for mor-001.
    open_queue(page, server, "?dataset=demo&sort=uncertainty",
               "1/3 · case mor-003-delay-premier-credit")
    shown(page, lambda s: s.get_by_text("possible violation — 55 % (uncalibrated)"), timeout=30_000)
    leave_fields(page)
    page.keyboard.press("j")
    expect_card(page, "2/3 · case air-001-compensation-regular-economy")
    leave_fields(page)
    page.keyboard.press("j")
    expect_card(page, "3/3 · case mor-001-delay-not-yet-late")
