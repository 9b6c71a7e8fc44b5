"""Signing in through the sidebar (``components.identity``'s local sign-in) in real Chromium,
as a person would: open the "Sign in" box, type a name, pick a role, submit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .flows import settle


def sign_in(page, name: str, role: str) -> None:
    """Sign ``name`` in with ``role`` on the page that is open; waits for the sidebar to say
    who is signed in."""
    signed_in = page.locator("[data-testid='stSidebar']").get_by_text(f"Signed in as {name} ({role})")
    for attempt in range(2):
        _submit_sign_in(page, name, role)
        try:
            signed_in.wait_for(timeout=30_000)
            break
        except Exception:
            # Beside CPU burners the submit once landed while a rerun was replacing the
            # sidebar, and nothing was signed in: fill the form and submit once more.
            if attempt == 1:
                raise
    settle(page)


def _submit_sign_in(page, name: str, role: str) -> None:
    settle(page)  # a rerun still in flight re-renders the sidebar under the clicks below
    sidebar = page.locator("[data-testid='stSidebar']")
    form = sidebar.locator("[data-testid='stForm']")
    if not form.is_visible():
        sidebar.locator("[data-testid='stExpander'] summary", has_text="Sign in").click()
    form.get_by_label("Sign-in name").fill(name)
    box = form.get_by_role("combobox", name="Role")
    option = page.get_by_role("option", name=role, exact=True)
    # The list opens in a portal that React may re-render while it opens: a click can find it
    # shut, or the option detached before the click lands. Open and pick again (three tries);
    # the "Signed in as" check proves which role was taken.
    for attempt in range(3):
        try:
            box.click()
            option.click(timeout=5_000)
            break
        except Exception:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            settle(page)
    form.get_by_role("button", name="Sign in").click()


def sign_out(page) -> None:
    page.locator("[data-testid='stSidebar']").get_by_role("button", name="Sign out").click()
    settle(page)


@contextmanager
def signed_in_elsewhere(browser, server, url_path: str, name: str, role: str) -> Iterator:
    """A second person in a browser of their own (a fresh context: no session shared with
    the test's page), on ``url_path`` and signed in as ``name`` with ``role``; yields the
    page and closes that browser after."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{server.url}/{url_path}")
        settle(page)
        sign_in(page, name, role)
        yield page
    finally:
        context.close()
