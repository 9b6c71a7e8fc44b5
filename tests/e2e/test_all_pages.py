"""Every page registered in app.py opens in real Chromium without an exception and without
requests leaving the machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import demo_index, make_server, wait_idle

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
URL_PATHS = re.findall(r'url_path="([a-z-]+)"', (ROOT / "app.py").read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = make_server(tmp_path_factory.mktemp("allpages"), demo_index())
    yield srv
    srv.stop()


def test_app_registers_pages():
    assert {"skills", "graph"} <= set(URL_PATHS)


@pytest.mark.parametrize("url_path", URL_PATHS)
def test_page_opens(server, page, url_path):
    page.goto(f"{server.url}/{url_path}")
    wait_idle(page)
    page.locator("h1").first.wait_for()
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()
    shots = ROOT / "docs" / "screenshots"
    page.screenshot(path=str(shots / f"{url_path}.png"))
    assert page.external_requests == []
