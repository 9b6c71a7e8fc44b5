"""Signing in through the sidebar (``components.identity``'s local sign-in) in real Chromium,
as a person would: open the "Sign in" box, type a name, pick a role, submit. Every step acts
on an idle page's newest render (``tests/e2e/screen.py``): the submits that once landed while
a rerun was replacing the sidebar, and were tried again, cannot happen."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .screen import IDLE_CEILING_MS, idle, new_page, screen, shown, until


def sign_in(page, name: str, role: str) -> None:
    """Sign ``name`` in with ``role`` on the page that is open; waits for the sidebar to say
    who is signed in. A window narrower than 1,000 px opens on a folded sidebar: it is
    opened first, as a person would."""
    _open_form(page).get_by_label("Sign-in name").fill(name)
    _pick_role(page, name, role)
    screen(page).sidebar.get_by_role("button", name="Sign in").click()
    shown(page, lambda s: s.sidebar.get_by_text(f"Signed in as {name} ({role})"))


ROLE_TRIES = 4


def _open_form(page):
    """The sidebar's sign-in form, the sidebar and its "Sign in" box opened first."""
    open_sidebar(page)
    sidebar = screen(page).sidebar
    if not sidebar.locator("[data-testid='stForm']").is_visible():
        sidebar.locator("[data-testid='stExpander'] summary", has_text="Sign in").click()
        idle(page)
    return shown(page, lambda s: s.sidebar.locator("[data-testid='stForm']"))


def _pick_role(page, name: str, role: str) -> None:
    """Pick ``role`` in the sign-in form's list. The list closes when the page reruns while
    it is open (a component's first draw, the sidebar folded late on a loaded machine: the
    option never showed within 30 s at 800x900 and 1280x800), so a list that shows no option
    is opened again, the sidebar and the typed name checked first; picking is idempotent."""
    for attempt in range(ROLE_TRIES):
        form = _open_form(page)
        field = form.get_by_label("Sign-in name")
        if field.input_value() != name:
            field.fill(name)
        box = form.get_by_role("combobox", name="Role")
        box.focus()
        box.press("ArrowDown")  # opens the list (a click on the box did not always)
        try:
            # The list opens in a portal outside the sidebar.
            shown(page, lambda s: s.get_by_role("option", name=role, exact=True),
                  timeout=10_000).click()
            return
        except AssertionError:
            if attempt == ROLE_TRIES - 1:
                raise
            box.press("Escape")


def open_sidebar(page) -> None:
    """Open the sidebar with its arrow when the window folded it (``components.narrow_window``).
    Waits first for the page to have settled its fold: under load the fold could land after
    the sidebar had been opened here, and close it under the sign-in form."""
    until(page, "() => document.documentElement.hasAttribute('data-wb-narrow-sidebar')",
          timeout=IDLE_CEILING_MS)
    expand = screen(page).get_by_test_id("stExpandSidebarButton")
    if expand.count() and expand.first.is_visible():
        expand.first.click()
        shown(page, lambda s: s.locator("[data-testid='stSidebarCollapseButton'] "
                                        "button[aria-expanded='true']"))


def sign_out(page) -> None:
    open_sidebar(page)
    screen(page).sidebar.get_by_role("button", name="Sign out").click()
    idle(page)


@contextmanager
def signed_in_elsewhere(browser, server, url_path: str, name: str, role: str) -> Iterator:
    """A second person in a browser of their own (a fresh context: no session shared with
    the test's page), on ``url_path`` and signed in as ``name`` with ``role``; yields the
    page and closes that browser after."""
    page = new_page(browser)
    try:
        page.goto(f"{server.url}/{url_path}")
        idle(page)
        sign_in(page, name, role)
        yield page
    finally:
        page.context.close()
