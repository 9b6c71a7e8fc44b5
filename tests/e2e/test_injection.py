"""Hostile text everywhere a user, a policy or a model can put it, in real Chromium against a
real server: a rule's condition and action, a SKILL's source, a conversation turn, the audited
reply, the environment state and the judge's reason all carry an ``<img onerror>``, a
``<script>`` and a Markdown image. On every page that shows them they read as text, no script
runs (in the page or any frame), and the browser asks nothing of another machine, nor of the
Markdown image's address."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import (
    IMAGE_PAYLOAD,
    PAYLOAD,
    SCRIPT_PAYLOADS,
    assert_no_exception,
    assert_nothing_ran,
    choose,
    goto,
    import_index,
    start_server,
)
from .graph_drawing import positions, wait_drawn
from .identity import sign_in
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

NAME = "hostile-desk"
IDENTITY = f"Verify the customer's identity before any refund. {PAYLOAD}"
PAYMENT = "Refund only to the original payment method."
SOURCE = (f"---\nname: {NAME}\ndescription: Refunds, with markup {PAYLOAD}\n---\n"
          f"# Hostile desk\n\n{IDENTITY}\n{PAYMENT}\n")
CASE_ID = "hostile-001"


def hostile_index() -> dict:
    def span(quote: str) -> list[dict]:
        start = SOURCE.index(quote)
        return [{"start": start, "end": start + len(quote)}]

    return {"format": "skillcdg/1", "skills": [{
        "name": NAME, "description": f"Refunds, with markup {PAYLOAD}", "source": SOURCE,
        "rules": [
            {"id": "R1", "condition": f"a customer asks for a refund {PAYLOAD}",
             "action": f"verify the customer's identity {PAYLOAD}", "modality": "required",
             "spans": span(IDENTITY)},
            {"id": "R2", "condition": "a refund is issued",
             "action": "refund to the original payment method", "modality": "required",
             "spans": span(PAYMENT)},
        ],
        "edges": [{"source": "R2", "target": "R1", "type": "require"}],
    }]}


def hostile_case() -> dict:
    return {
        "id": CASE_ID, "session": "s-hostile", "label": "negative", "skills": [NAME],
        "context": [{"role": "user", "content": f"Refund my order to my gift card. {PAYLOAD}"}],
        "background": {"note": PAYLOAD},
        "model_response": f"Refund issued to your gift card, no identity check needed. {PAYLOAD}",
    }


def seed(eng) -> None:
    from store import audit_repo
    from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case, case_from_dict
    from workbench.graph import PolicyIndex

    index = hostile_index()
    import_index(eng, index)
    case = case_from_dict(hostile_case())
    audit_repo.save_cases(eng, "hostile", [case], actor=COMMAND_LINE)
    trace = audit_case(case, AuditIndex(PolicyIndex.from_dict(index)), "cdg", None,
                       AuditOptions(judge_mode="none"))
    assert trace.error is None and "R1" in trace.closure[NAME], trace.to_dict()
    trace.judge_mode = "whole"
    trace.verdict = Verdict(True, f"R1 is violated: no identity check. {PAYLOAD}", ["R1"])
    audit_repo.save_trace(eng, trace, "run-hostile", "hostile", actor=COMMAND_LINE)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("injection"), seed)
    yield srv
    srv.stop()


@pytest.fixture
def watched(page):
    """The page, recording every request the browser makes."""
    page.all_requests = []  # type: ignore[attr-defined]
    page.on("request", lambda req: page.all_requests.append(req.url))  # type: ignore[attr-defined]
    return page


def assert_inert(page, server) -> None:
    """No payload ran or loaded anything; the page did not fail."""
    # An onerror fires as soon as a broken image is tried, which is when it is drawn: once
    # the page is idle (nothing drawn for screen.QUIET_MS), a payload would have run.
    idle(page)
    assert_no_exception(page, server)
    assert_nothing_ran(page)
    for frame in page.frames:  # the payload never became an element
        assert frame.locator("img[src='x']").count() == 0, frame.url
    assert page.external_requests == []
    hostile = [u for u in page.all_requests
               if urlsplit(u).port == 9 or urlsplit(u).path.endswith(("/x", "/pwn.png"))]
    assert hostile == []


def shows_as_text(locator) -> None:
    """Every part of the payload is in the element's visible text, verbatim."""
    for part in (*SCRIPT_PAYLOADS, IMAGE_PAYLOAD):
        expect(locator.first).to_contain_text(part)


def grid_holds(page, text: str) -> None:
    """A data grid (drawn on a canvas) holds ``text`` in a cell: the DOM has it only in the
    grid's accessibility table."""
    shown(page, lambda s: s.locator("[data-testid='stDataFrame'] td", has_text=text))


def test_skills_page(server, watched):
    goto(watched, server, "")
    shown(watched, lambda s: s.get_by_text("v1 by import (imported)"))
    grid_holds(watched, f"verify the customer's identity {PAYLOAD}")
    grid_holds(watched, f"Refunds, with markup {PAYLOAD}")
    assert_inert(watched, server)


def test_graph_page(server, watched):
    page = watched
    goto(page, server, "graph")
    # It opens on R2 (it has a prerequisite); focus R1, the hostile rule.
    action = hostile_index()["skills"][0]["rules"][0]["action"]
    choose(page, "Rule", f"R1 — {action[:80]}")
    shows_as_text(screen(page).locator("[data-testid='stText']", has_text="When: a customer asks"))
    shows_as_text(screen(page).locator("[data-testid='wb-source']"))
    mark = screen(page).locator("[data-testid='wb-source'] mark").first
    expect(mark).to_contain_text(SCRIPT_PAYLOADS[1])
    grid_holds(page, f"a customer asks for a refund {PAYLOAD}")
    # The drawing's tooltip for R1 (vis-network, in the app's page) shows the rule as text.
    wait_drawn(page)
    x, y = _scrolled_to(page, "R1")
    page.mouse.move(x - 30, y - 30)
    page.mouse.move(x, y, steps=4)
    tip = screen(page).locator(".vis-tooltip")
    expect(tip).to_be_visible(timeout=10_000)
    # vis-network shows a string title as text (innerText): verbatim, not entity-escaped.
    expect(tip).to_contain_text("Then: verify the customer's identity")
    shows_as_text(tip)
    assert_inert(page, server)


def _scrolled_to(page, rule_id: str) -> tuple[float, float]:
    from .graph_drawing import _SCROLL, DRAWING

    screen(page).evaluate(_SCROLL, [DRAWING, positions(page)[rule_id][1]])
    return positions(page)[rule_id]


def test_replay_page(server, watched):
    page = watched
    goto(page, server, "replay")
    choose(page, "Case", f"{CASE_ID} — gold: violation")
    shows_as_text(screen(page).locator("[data-testid='stChatMessage']"))
    shows_as_text(screen(page).locator("[data-testid='stText']",
                                       has_text="Refund issued to your gift card"))
    card = screen(page).locator(".st-key-verdict_a")
    expect(card.locator("[data-testid='stAlertContentError'] p")).to_have_text("Violation")
    shows_as_text(card.locator("[data-testid='stText']", has_text="R1 is violated"))
    shows_as_text(card.locator("[data-testid='stText']", has_text="When: a customer asks"))
    shows_as_text(card.locator("[data-testid='wb-source'] mark"))
    # why each rule is in context: one plain-text line per rule, its require path
    expect(screen(page).locator("[data-testid='stText']", has_text="R1: seed").first).to_be_visible()
    screen(page).get_by_text("Environment state").first.click()
    state = shown(page, lambda s: s.locator("[data-testid='stJson']")).first
    state.locator(".node-ellipsis").first.click()  # opened one level: {"note": ...}
    shows_as_text(state)
    assert_inert(page, server)


def test_review_page(server, watched):
    page = watched
    goto(page, server, "review")
    shown(page, lambda s: s.locator(".st-key-rv_card", has_text=CASE_ID))
    shows_as_text(screen(page).locator("[data-testid='stText']", has_text="R1 is violated"))
    shows_as_text(screen(page).locator("[data-testid='stChatMessage']"))
    shows_as_text(screen(page).locator("[data-testid='wb-source'] mark"))
    assert_inert(page, server)


def test_annotate_page(server, watched):
    page = watched
    goto(page, server, "annotate")
    sign_in(page, "ada", "annotator")
    # Rule correctness opens on R1: its card and its highlighted span.
    card = screen(page).locator("[data-testid='wb-rule-card']")
    expect(card).to_contain_text("R1")
    shows_as_text(card)
    shows_as_text(screen(page).locator("[data-testid='wb-source'] mark"))
    assert_inert(page, server)
    # CDG inspection shows the stored case: the interaction and the judge's reason.
    screen(page).get_by_text("CDG inspection", exact=True).click()
    idle(page)
    shows_as_text(screen(page).locator("[data-testid='stText']",
                                       has_text="Refund issued to your gift card"))
    shows_as_text(screen(page).locator("[data-testid='stText']", has_text="R1 is violated"))
    grid_holds(page, f"verify the customer's identity {PAYLOAD}")
    assert_inert(page, server)
