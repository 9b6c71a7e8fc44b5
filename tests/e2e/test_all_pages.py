"""Every page registered in app.py opens in real Chromium without an exception and without
requests leaving the machine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .conftest import demo_server, seed_demo_run
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
URL_PATHS = re.findall(r'url_path="([a-z-]+)"', (ROOT / "app.py").read_text())
DEFAULT_PAGE = re.search(r'url_path="([a-z-]+)", default=True', (ROOT / "app.py").read_text()).group(1)


server = demo_server("allpages", seed_demo_run)


def test_app_registers_pages():
    assert {"skills", "graph"} <= set(URL_PATHS)


@pytest.mark.parametrize("url_path", URL_PATHS)
def test_page_opens(server, page, url_path):
    # The default page (Skills) is served at the root, not at its url_path.
    path = "" if url_path == DEFAULT_PAGE else url_path
    page.goto(f"{server.url}/{path}")
    shown(page, lambda s: s.locator("h1"))
    view = screen(page)
    assert view.get_by_text("Page not found").count() == 0
    errors = view.locator("[data-testid='stException']")
    assert errors.count() == 0, errors.first.inner_text()
    # Canvases, charts and graph iframes loaded (after the first load, no request for
    # 500 ms) and drawn (the page idle: nothing drawn for screen.QUIET_MS): a late
    # off-machine request would otherwise slip past the check below (and a screenshot would
    # catch half-drawn tables).
    page.wait_for_load_state("networkidle")
    idle(page)
    if os.environ.get("WORKBENCH_SCREENSHOTS"):  # refresh README screenshots on request only
        page.screenshot(path=str(ROOT / "docs" / "screenshots" / f"{url_path}.png"))
    assert page.external_requests == []
