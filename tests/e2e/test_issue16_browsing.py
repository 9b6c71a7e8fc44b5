"""Issue #16, items 5 and 10, in real Chromium against one real server: the mouse wheel over a
rule graph (Graph page, Replay's closure) scrolls the page and leaves the graph's zoom alone;
the Graph page's rule search narrows the "Rules shown" table; the Review queue's list view
pages and filters a queue that needs several pages.

Each check reads what would differ if the fix were undone: the vis-network scale of the
drawing and the drawing's position on screen; the table's row count (the grid's
accessibility table, since glide-data-grid draws its cells on a canvas) and its ids; the
list's "N of M rows match · page p of P" counter and the cells of its first rows.
"""

from __future__ import annotations

import dataclasses
import re
import time
from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import (
    assert_no_exception,
    demo_cases,
    demo_index_data,
    goto,
    start_server,
)
from .screen import idle, new_page, screen, shown, until
from .test_analyst_flow import seed_demo, violation_trace

pytestmark = pytest.mark.e2e

BIG = "big"  # a Review queue of QUEUE cases: three pages of the list's 50 rows
QUEUE = 120
DECIDED = 7  # the first DECIDED cases carry a decision by "rev"


def _seed(eng) -> None:
    from store import audit_repo
    from store import review as review_store
    from workbench.audit import AuditTrace, Verdict
    from workbench.review.queue import ReviewDecision

    index = demo_index_data()
    cases = demo_cases()
    seed_demo(eng, index, cases, violation_trace(index, {c.id for c in cases}))

    # Every case's gold is "violation"; even cases are judged violation (queued: flagged), odd
    # ones compliant (queued: the judge disagrees with gold). So the list holds both verdicts.
    violation = next(c.label for c in cases if c.label == "negative")
    big = [dataclasses.replace(cases[i % len(cases)], id=f"case-{i:04d}", label=violation)
           for i in range(QUEUE)]
    audit_repo.save_cases(eng, BIG, big, actor=COMMAND_LINE)
    audit_repo.save_traces(eng, [AuditTrace(id=c.id, strategy="cdg", label=c.label,
                                            verdict=Verdict(i % 2 == 0, "r", []))
                                 for i, c in enumerate(big)], "bench", BIG, actor=COMMAND_LINE)
    for c in big[:DECIDED]:
        review_store.add_decision(eng, ReviewDecision(BIG, "bench", c.id, "cdg", "rev", "confirm"),
                                  actor=COMMAND_LINE)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("issue16_browsing"), _seed)
    yield srv
    srv.stop()


# -- the wheel over a graph ------------------------------------------------------------------

class _Drawing:
    """A drawn vis-network: the Graph page's component, or Replay's closure (the same
    component since issue 44: it was an iframe of its own)."""

    def __init__(self, page, where: str):
        key = "graph_drawing" if where == "graph" else "closure_graph_a_0"
        until(page, "(k) => window.__wbRuleGraphs && window.__wbRuleGraphs[k]", key)
        self.el = page.evaluate_handle(
            "(k) => window.__wbRuleGraphs[k].body.container.closest(\"[data-testid='wb-rule-graph']\")",
            key).as_element()
        self.scale = lambda: page.evaluate("(k) => window.__wbRuleGraphs[k].getScale()", key)


def _settled_scale(drawing: _Drawing) -> float:
    """The graph's zoom once its first layout and fit are over (two equal readings)."""
    last = None
    for _ in range(20):
        scale = drawing.scale()
        if scale == last:
            return scale
        last = scale
        time.sleep(0.3)
    raise AssertionError(f"the graph's zoom kept changing (last {last})")


def _wheel_over_graph(page, where: str) -> tuple[float, float, float, float]:
    """Put the graph in the window, turn the wheel over its middle; returns the
    drawing's top on screen and its scale, before and after."""
    drawing = _Drawing(page, where)
    el = drawing.el
    # A tall drawing (the Graph page's whole graph grows downwards) starts at the window's top.
    el.evaluate(f"e => e.scrollIntoView({{block: '{'start' if where == 'graph' else 'center'}'}})")
    scale_before = _settled_scale(drawing)
    box = el.bounding_box()
    shown = min(box["height"], page.viewport_size["height"] - max(box["y"], 0))
    page.mouse.move(box["x"] + box["width"] / 2, max(box["y"], 0) + shown / 2)
    page.mouse.wheel(0, 400)
    top_after = box["y"]
    for _ in range(20):  # the page scrolls (smoothly) a moment after the event
        time.sleep(0.2)
        top_after = el.bounding_box()["y"]
        if top_after < box["y"] - 100:
            break
    return box["y"], top_after, scale_before, drawing.scale()


@pytest.mark.parametrize("where", ["graph", "replay"])
def test_wheel_over_a_graph_scrolls_the_page_not_the_zoom(browser, server, where):
    """Issue #16 item 5: the wheel zoomed the graph and trapped the page's scrolling."""
    page = new_page(browser, 1400, 900)
    try:
        if where == "graph":
            goto(page, server, "graph?skill=airline-policy")
        else:
            case = violation_trace(demo_index_data(), {c.id for c in demo_cases()}).id
            goto(page, server, f"replay?dataset=demo&case={case}")
            shown(page, lambda s: s.get_by_text(re.compile(r"^4 · Closure")))
        top_before, top_after, scale_before, scale_after = _wheel_over_graph(page, where)
        assert scale_after == pytest.approx(scale_before, rel=1e-9), (
            f"the wheel zoomed the graph: scale {scale_before} -> {scale_after}")
        assert top_after < top_before - 100, (
            f"the page did not scroll: the graph stayed at y={top_after:.0f} (was {top_before:.0f})")
        assert_no_exception(page, server)
    finally:
        page.context.close()


# -- the rule search narrows the rules table ------------------------------------------------

_COLUMN = """(box, name) => {
  const grid = box.querySelector("table[role='grid']");
  const heads = [...grid.querySelectorAll("th")].map(th => th.textContent.trim());
  const i = heads.indexOf(name);
  return [...grid.querySelectorAll("tbody tr")].map(tr => tr.querySelectorAll("td")[i])
    .filter(td => td).map(td => td.textContent.trim());
}"""


def _expect_rows(table, n: int) -> None:
    """Wait (up to the expect timeout) until the dataframe holds ``n`` data rows (its
    accessibility table counts the header row too): the grid redraws a moment after the
    script run that changed its data has finished."""
    expect(table.locator("table[role='grid']")).to_have_attribute("aria-rowcount", str(n + 1))


def _column(table, name: str) -> list[str]:
    """The cells of column ``name`` in the rows the grid has rendered (its visible rows)."""
    return table.evaluate(_COLUMN, name)


def test_rule_search_narrows_the_rules_table(browser, server):
    """Issue #16 item 5: the rule table listed all rules whatever the search said."""
    from workbench.graph import PolicyIndex
    from workbench.graph.rule_graph import search_rules

    skill = PolicyIndex.from_dict(demo_index_data()).skills["airline-policy"]
    query = "compensation"
    hits = search_rules(skill, query)
    first = next(iter(skill.graph.rules))
    assert 0 < len(hits) < 10 and first not in hits  # the data this test relies on
    page = new_page(browser)
    try:
        goto(page, server, "graph?skill=airline-policy")
        screen(page).get_by_text("whole graph", exact=True).click()
        idle(page)
        screen(page).get_by_text("Rules shown", exact=True).click()
        table = shown(page, lambda s: s.locator("[data-testid='stExpander']", has_text="Rules shown")
                      .locator("[data-testid='stDataFrame']:has(table[role='grid'])"))
        _expect_rows(table, len(skill.graph))
        assert first in _column(table, "id")

        search = screen(page).get_by_label("Search rules")
        search.fill(query)
        search.press("Enter")
        idle(page)
        expect(screen(page).get_by_text(f"{len(hits)} of {len(skill.graph)} rules match.")
               ).to_be_visible()
        _expect_rows(table, len(hits))
        assert _column(table, "id") == hits  # only the matching rules; the first one is gone

        search.fill("")
        search.press("Enter")
        idle(page)
        _expect_rows(table, len(skill.graph))
        assert first in _column(table, "id")
        assert_no_exception(page, server)
    finally:
        page.context.close()


# -- the Review queue's list view -------------------------------------------------------------

def _first_cell(page, table, name: str, value: str) -> None:
    """The first row's cell of column ``name`` reads ``value`` on the idle page."""
    idle(page)
    cells = _column(table, name)
    assert cells[:1] == [value], f"first {name!r} cell is {cells[:1]}, expected {value!r}"


@contextmanager
def _list_open(browser, server, width: int, height: int, path: str, title: re.Pattern[str],
               expander: str):
    """Page ``path`` in a fresh browser of ``width`` x ``height`` with the expander whose
    title matches ``title`` opened: yields the page and the expander holding the text
    ``expander``; the browser closes after."""
    page = new_page(browser, width, height)
    try:
        goto(page, server, path)
        screen(page).get_by_text(title).click()
        idle(page)
        yield page, screen(page).locator("[data-testid='stExpander']", has_text=expander)
    finally:
        page.context.close()


def _queue_list(browser, server, width: int, height: int):
    """The big queue's Review page with its "Queue list" open (see :func:`_list_open`)."""
    return _list_open(browser, server, width, height, f"review?dataset={BIG}",
                      re.compile(r"^Queue list \("), "Queue list")


def test_review_list_pages_and_filters(browser, server):
    """Issue #16 item 10: Review was one case at a time; its list view pages and filters."""
    with _queue_list(browser, server, 1400, 1000) as (page, listing):
        table = listing.locator("[data-testid='stDataFrame']")
        next_page = listing.get_by_role("button", name="Next page")
        shown(page, lambda s: s.locator("[data-testid='stExpander']", has_text="Queue list")
              .locator("[data-testid='stDataFrame'] table[role='grid']"))
        counter = screen(page).get_by_text(re.compile(r"rows match · page \d+ of \d+"))
        expect(counter).to_have_text(f"{QUEUE} of {QUEUE} rows match · page 1 of 3")
        _expect_rows(table, 50)
        _first_cell(page, table, "#", "1")
        first_page = _column(table, "case")

        next_page.click()
        idle(page)
        expect(counter).to_have_text(f"{QUEUE} of {QUEUE} rows match · page 2 of 3")
        _expect_rows(table, 50)
        _first_cell(page, table, "#", "51")
        assert not set(_column(table, "case")) & set(first_page)

        next_page.click()
        idle(page)
        expect(counter).to_have_text(f"{QUEUE} of {QUEUE} rows match · page 3 of 3")
        _expect_rows(table, QUEUE - 100)
        expect(next_page).to_be_disabled()

        # Filter by verdict: only the compliant half; page 3 is clamped to the 2 there are.
        box = screen(page).get_by_label("Filter cases")
        box.fill("compliant")
        box.press("Enter")
        idle(page)
        expect(counter).to_have_text(f"{QUEUE // 2} of {QUEUE} rows match · page 2 of 2")
        _expect_rows(table, QUEUE // 2 - 50)
        verdicts = _column(table, "verdict")
        assert verdicts and set(verdicts) == {"compliant"}

        # Filter by decision: the verdicts "rev" confirmed, on one page.
        box.fill("rev: confirm")
        box.press("Enter")
        idle(page)
        expect(counter).to_have_text(f"{DECIDED} of {QUEUE} rows match · page 1 of 1")
        _expect_rows(table, DECIDED)
        assert sorted(_column(table, "case")) == [f"case-{i:04d}" for i in range(DECIDED)]
        assert all(d == "rev: confirm" for d in _column(table, "decisions"))
        assert_no_exception(page, server)


_CLIPPED_JS = """(root) => {
    // The label's text and every box around it up to the widget: a label cut to "D…" has a
    // box narrower than its text (scrollWidth > clientWidth) under overflow hidden/ellipsis.
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let node, found = null;
    while ((node = walker.nextNode())) if (node.textContent.trim() === "Descending") found = node;
    if (!found) return {error: "no Descending text"};
    const range = document.createRange();
    range.selectNodeContents(found);
    const text = range.getBoundingClientRect();
    const boxes = [];
    for (let el = found.parentElement; el && el !== root.parentElement; el = el.parentElement) {
        const r = el.getBoundingClientRect();
        boxes.push({tag: el.tagName, testid: el.dataset.testid || "", scroll: el.scrollWidth,
                    client: el.clientWidth, left: r.left, right: r.right,
                    overflow: getComputedStyle(el).overflowX});
    }
    return {textLeft: text.left, textRight: text.right, textWidth: text.width, boxes};
}"""


def _case_list(browser, server, width: int, height: int):
    """Replay's list of the big dataset's cases, open (see :func:`_list_open`)."""
    return _list_open(browser, server, width, height, f"replay?dataset={BIG}",
                      re.compile(r"^Browse the \d+ cases"), "Browse the")


def test_descending_toggle_label_is_readable_at_1024_px(browser, server):
    """Issue #16 item 10: at 1024 px the case list's "Descending" toggle label was cut to
    "D…". Its text must fit the boxes around it: none clips it (scroll width over client
    width with overflow hidden) and the text lies inside the toggle's own box. (Replay's case
    list: Review's queue list has no sort of its own since issue 44, it keeps the queue's.)"""
    with _case_list(browser, server, 1024, 900) as (page, listing):
        toggle = shown(page, lambda s: s.locator("[data-testid='stExpander']", has_text="Browse the")
                       .locator("[data-testid='stCheckbox']", has_text="Descending"))
        toggle.screenshot(path=str(server.log.parent / "descending-1024.png"))
        listing.locator("[data-testid='stHorizontalBlock']").first.screenshot(
            path=str(server.log.parent / "list-controls-1024.png"))
        m = toggle.evaluate(_CLIPPED_JS)
        assert "error" not in m, m
        clipped = [b for b in m["boxes"] if b["overflow"] != "visible" and b["scroll"] > b["client"] + 1]
        assert clipped == [], m
        widget = m["boxes"][-1]
        assert widget["left"] - 1 <= m["textLeft"] and m["textRight"] <= widget["right"] + 1, m
        assert_no_exception(page, server)
