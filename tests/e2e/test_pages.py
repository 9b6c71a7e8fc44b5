"""Open the Skills and Graph pages in real Chromium against a real server."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from .conftest import make_server  # noqa: E402
from .flows import assert_nothing_ran, submit  # noqa: E402
from .screen import idle, screen, shown  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path):
    data = refund_index_dict()
    # Hostile text in a rule and in the source must render as text and run nothing.
    skill = data["skills"][0]
    payload = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    skill["rules"][0]["action"] = f"verify identity {payload}"
    skill["source"] += f"\n{payload}\n"
    srv = make_server(tmp_path, data)
    yield srv
    srv.stop()


def test_skills_and_graph_pages_render_offline(server, page):
    page.goto(f"{server.url}/")  # Skills is the default page, served at /
    shown(page, lambda s: s.get_by_role("heading", name="Skills"))
    # st.dataframe draws on a canvas; the metrics and the picker are DOM text.
    metrics = shown(page, lambda s: s.locator("[data-testid='stMetric']", has_text="Complexity"))
    assert metrics.count() == 1
    values = screen(page).locator("[data-testid='stMetricValue']").all_inner_texts()
    assert values[:3] == ["1", "4", "3"]
    shown(page, lambda s: s.get_by_text("v1 by import (imported)"))

    page.goto(f"{server.url}/graph")
    shown(page, lambda s: s.get_by_role("heading", name="Graph"))
    shown(page, lambda s: s.get_by_text("4 of 4 rules match."))
    # The drawing (vis-network in the page, a Components-v2 component) holds its canvas.
    shown(page, lambda s: s.locator("[data-testid='wb-rule-graph'] canvas"))
    # The rule's source span is highlighted.
    mark = shown(page, lambda s: s.locator("[data-testid='wb-source'] mark")).first
    # It opens on R3 (most prerequisites); its closure is R3, R2, R4, R1.
    shown(page, lambda s: s.get_by_text("4 rules shown."))
    assert "Refund the amount paid" in mark.inner_text()
    assert page.external_requests == []


def test_search_and_closure_focus(server, page):
    page.goto(f"{server.url}/graph")
    idle(page)
    submit(page, "Search rules", "coupon")
    shown(page, lambda s: s.get_by_text("1 of 4 rules matches."))
    # Rule R3's closure is R3, R2, R4, R1.
    shown(page, lambda s: s.get_by_text("4 rules shown."))


def test_hostile_text_renders_as_text(server, page):
    page.goto(f"{server.url}/")  # Skills is the default page, served at /
    idle(page)
    page.goto(f"{server.url}/graph")
    source = shown(page, lambda s: s.locator("[data-testid='wb-source']"))
    assert_nothing_ran(page)
    assert "<script>window.__pwned=2</script>" in source.inner_text()


def test_start_here_links_open_the_page_in_this_tab(server, page):
    """Issue 56: the Start panel's links opened a new tab (a Markdown link); they move this
    tab, in this session, to the page they name."""
    page.goto(f"{server.url}/skills")
    shown(page, lambda s: s.get_by_text("Start here: what this workbench does"))
    page.evaluate("window.__sameDocument = true")  # gone if the window loads again
    screen(page).get_by_role("link", name="3. Check the rules").click()
    shown(page, lambda s: s.get_by_role("heading", name="Graph"))
    assert urlsplit(page.url).path == "/graph", page.url
    assert page.context.pages == [page], "the link opened another tab"
    assert screen(page).evaluate("window.__sameDocument === true"), "the link reloaded the page"
