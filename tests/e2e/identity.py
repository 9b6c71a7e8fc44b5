"""Signing in through the sidebar (``components.identity``'s local sign-in) in real Chromium,
as a person would: open the "Sign in" box, type a name, pick a role, submit."""

from __future__ import annotations

from .flows import settle


def sign_in(page, name: str, role: str) -> None:
    """Sign ``name`` in with ``role`` on the page that is open; waits for the sidebar to say
    who is signed in."""
    sidebar = page.locator("[data-testid='stSidebar']")
    form = sidebar.locator("[data-testid='stForm']")
    if not form.is_visible():
        sidebar.locator("[data-testid='stExpander'] summary", has_text="Sign in").click()
    form.get_by_label("Sign-in name").fill(name)
    box = form.get_by_role("combobox", name="Role")
    box.click()
    # Type to filter the list and take the match: a click on an option could miss while the
    # list (drawn in a portal at the page's bottom edge) is still opening.
    page.keyboard.type(role)
    page.get_by_role("option", name=role, exact=True).wait_for(timeout=10_000)
    page.keyboard.press("Enter")
    form.get_by_role("button", name="Sign in").click()
    sidebar.get_by_text(f"Signed in as {name} ({role})").wait_for(timeout=30_000)
    settle(page)


def sign_out(page) -> None:
    page.locator("[data-testid='stSidebar']").get_by_role("button", name="Sign out").click()
    settle(page)
