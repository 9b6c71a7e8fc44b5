"""Issue #16, item 4, in real Chromium: links open cold, in a fresh browser context (no
session, no cookies), on the thing they name; choosing another case changes the address and
a reload keeps it (it went back to the first case)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import (
    assert_no_exception,
    choose,
    demo_cases,
    demo_index_data,
    import_index,
    start_server,
)
from .graph_drawing import click_rule, positions, wait_drawn
from .screen import idle, new_page, screen, shown

pytestmark = pytest.mark.e2e


def _seed(eng) -> None:
    from store import audit_repo

    import_index(eng, demo_index_data())
    audit_repo.save_cases(eng, "demo", demo_cases(), actor=COMMAND_LINE)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("deep_links"), _seed)
    yield srv
    srv.stop()


def _cold(browser, server, path: str):
    """A brand-new browser context (as a colleague opening a pasted link) on ``path``."""
    page = new_page(browser)
    page.goto(f"{server.url}{path}")
    shown(page, lambda s: s.locator("h1"))
    assert_no_exception(page, server)
    return page.context, page


@pytest.mark.parametrize("path, heading", [("/skills", "Skills"), ("/glossary", "Glossary"),
                                           ("/evaluate", "Evaluate")])
def test_page_paths_resolve(browser, server, path, heading):
    context, page = _cold(browser, server, path)
    try:
        expect(screen(page).locator("h1").first).to_have_text(heading)
        expect(screen(page).get_by_text("Page not found")).to_have_count(0)
    finally:
        context.close()


def test_replay_case_link_opens_cold_and_survives_reload(browser, server):
    cases = demo_cases()
    target, other = cases[3].id, cases[6].id
    context, page = _cold(browser, server, f"/replay?dataset=demo&case={target}")
    try:
        case_box = screen(page).get_by_role("combobox", name="Case", exact=True)
        expect(case_box).to_have_value(re.compile(re.escape(target)))
        gold = "violation" if cases[6].label == "negative" else "compliant"
        choose(page, "Case", f"{other} — gold: {gold}")
        expect(page).to_have_url(re.compile(rf"case={re.escape(other)}"))
        page.reload()
        idle(page)
        expect(screen(page).get_by_role("combobox", name="Case", exact=True)).to_have_value(
            re.compile(re.escape(other)))
        assert_no_exception(page, server)
    finally:
        context.close()


def test_graph_rule_link_opens_cold(browser, server):
    skill = demo_index_data()["skills"][0]
    rule = skill["rules"][1]["id"]
    context, page = _cold(browser, server, f"/graph?skill={skill['name']}&rule={rule}")
    try:
        expect(screen(page).get_by_role("combobox", name="Rule", exact=True)).to_have_value(
            re.compile(rf"^{re.escape(rule)} "))
        expect(screen(page).get_by_role("heading", name=f"Rule {rule}")).to_be_visible()
    finally:
        context.close()


def test_clicking_a_graph_node_opens_that_rule(browser, server):
    """Issue #16 item 5 and issue 35 item 4: a click on a rule in the drawing opens its panel
    and its address, without a page load (it was a full reload of the window, 9 s)."""
    skill = demo_index_data()["skills"][0]["name"]
    context, page = _cold(browser, server, f"/graph?skill={skill}")
    try:
        expect(page).to_have_url(re.compile(r"rule="))
        current = re.search(r"rule=([^&]+)", page.url).group(1)
        wait_drawn(page)
        others = [r for r in positions(page) if r != current]
        assert others, "the closure drawn has a rule besides the chosen one"
        target = others[0]
        screen(page).evaluate("window.__sameDocument = true")  # gone if the window loads again
        click_rule(page, target)
        expect(page).to_have_url(re.compile(rf"[?&]rule={re.escape(target)}(&|$)"))
        idle(page)
        expect(screen(page).get_by_role("heading", name=f"Rule {target}")).to_be_visible()
        expect(screen(page).get_by_role("combobox", name="Rule", exact=True)).to_have_value(
            re.compile(rf"^{re.escape(target)} "))
        assert screen(page).evaluate("window.__sameDocument === true"), "the click reloaded the page"
        assert_no_exception(page, server)
    finally:
        context.close()


def test_choosing_a_row_of_the_case_list_opens_that_case(browser, server):
    """Issue #16 item 10: Replay's case list picks the case whose row is chosen, and the
    choice reaches the address like the dropdown's."""
    cases = demo_cases()
    target = cases[3].id
    context, page = _cold(browser, server, f"/replay?dataset=demo&case={cases[0].id}")
    try:
        screen(page).get_by_text(re.compile(r"^Browse the \d+ cases of demo")).click()
        # Narrow the list to one row (filtering is part of the picker), then tick its marker:
        # the last row of a one-row grid sits just above the canvas's bottom edge.
        screen(page).get_by_label("Filter cases").fill(target)
        screen(page).get_by_label("Filter cases").press("Enter")
        idle(page)
        expect(screen(page).get_by_text(re.compile(r"^1 of \d+ rows match"))).to_be_visible()
        box = screen(page).locator(".st-key-replay_cases_table")
        canvas = shown(page, lambda s: s.locator(
            ".st-key-replay_cases_table [data-testid='data-grid-canvas']"))
        box.evaluate("e => e.scrollIntoView({block: 'center'})")
        bb = canvas.bounding_box()
        page.mouse.click(bb["x"] + 15, bb["y"] + bb["height"] - 12)
        expect(page).to_have_url(re.compile(rf"case={re.escape(target)}(&|$)"))
        expect(screen(page).get_by_role("combobox", name="Case", exact=True)).to_have_value(
            re.compile(re.escape(target)))
        assert_no_exception(page, server)
    finally:
        context.close()
