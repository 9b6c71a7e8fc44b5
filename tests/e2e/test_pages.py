"""Open the Skills and Graph pages in real Chromium against a real server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from .conftest import make_server, wait_idle  # noqa: E402
from .flows import submit  # noqa: E402

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
    wait_idle(page)
    page.get_by_role("heading", name="Skills").wait_for()
    page.get_by_text("Complexity C (all)").wait_for()
    # st.dataframe draws on a canvas; the metrics and the picker are DOM text. On a loaded
    # machine the columns' metrics can arrive one by one: wait for all four first.
    page.wait_for_function("document.querySelectorAll(\"[data-testid='stMetricValue']\").length >= 4")
    metrics = page.locator("[data-testid='stMetricValue']").all_inner_texts()
    assert metrics[:3] == ["1", "4", "3"]
    page.get_by_text("v1 by import (imported)").wait_for()

    page.goto(f"{server.url}/graph")
    wait_idle(page)
    page.get_by_role("heading", name="Graph").wait_for()
    page.get_by_text("4 of 4 rules match.").wait_for()
    # The drawing (vis-network in the page, a Components-v2 component) holds its canvas.
    page.locator("[data-testid='wb-rule-graph'] canvas").first.wait_for(timeout=30_000)
    # The rule's source span is highlighted.
    page.locator("[data-testid='wb-source'] mark").first.wait_for()
    # It opens on R3 (most prerequisites); its closure is R3, R2, R4, R1.
    page.get_by_text("4 rules shown.").wait_for()
    assert "Refund the amount paid" in page.locator("[data-testid='wb-source'] mark").first.inner_text()
    assert page.external_requests == []


def test_search_and_closure_focus(server, page):
    page.goto(f"{server.url}/graph")
    wait_idle(page)
    submit(page, "Search rules", "coupon")
    page.get_by_text("1 of 4 rules matches.").wait_for()
    # Rule R3's closure is R3, R2, R4, R1.
    page.get_by_text("4 rules shown.").wait_for()


def test_hostile_text_renders_as_text(server, page):
    page.goto(f"{server.url}/")  # Skills is the default page, served at /
    wait_idle(page)
    page.goto(f"{server.url}/graph")
    wait_idle(page)
    page.locator("[data-testid='wb-source']").first.wait_for()
    page.wait_for_timeout(1500)
    assert page.evaluate("window.__pwned") is None
    for frame in page.frames:
        assert frame.evaluate("window.__pwned") is None
    assert "<script>window.__pwned=2</script>" in page.locator("[data-testid='wb-source']").inner_text()
