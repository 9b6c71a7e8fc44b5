"""Issue 44 item 8: the theme chosen in Streamlit's menu holds on every page. Streamlit keeps
it in localStorage under the path the tab was opened at, so a dark Review came back light on
Settings opened by its address; components.identity.share_theme writes it for every page."""

from __future__ import annotations

import pytest

from .flows import start_server
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path)
    yield srv
    srv.stop()


def background(page) -> str:
    return screen(page).locator("[data-testid='stApp']").evaluate(
        "e => getComputedStyle(e).backgroundColor")


def test_a_dark_theme_chosen_on_one_page_holds_on_another(server, page):
    page.goto(f"{server.url}/review")
    shown(page, lambda s: s.locator("html[data-wb-theme-shared='yes']"))
    light = background(page)
    # What Streamlit's frontend writes when the menu's theme is set to Dark on this page.
    screen(page).evaluate("localStorage.setItem('stActiveTheme-/review-v2', JSON.stringify('Dark'))")
    assert screen(page).evaluate("localStorage.getItem('stActiveTheme-/settings-v2')") == '"Dark"'
    page.goto(f"{server.url}/settings")  # a fresh load by its own address
    idle(page)
    shown(page, lambda s: s.locator("h1"))
    dark = background(page)
    assert dark != light and dark == "rgb(20, 23, 28)", (light, dark)  # [theme.dark] backgroundColor
