"""Issue #45, item 3, in real Chromium against a real server: with an admin without a password
on the roster, the sidebar's sign-in area and the Settings page say so, name the admin and
give the command that sets a password; typing that name alone does sign in as admin (what
the warning is about), and the warning stays in view."""

from __future__ import annotations

import pytest

from .conftest import Server
from .flows import assert_no_exception
from .screen import screen, shown

pytestmark = pytest.mark.e2e

WARNING = "ada is an admin without a password: anyone who types that name signs in as admin."
FIX = "workbench people add ada --role admin --password-env VAR --as ada"


@pytest.fixture
def server(tmp_path):
    from sqlmodel import Session

    from store.db import make_engine
    from store.people import PersonRow

    db_url = f"sqlite:///{tmp_path / 'e2e.db'}"
    eng = make_engine(db_url)
    # Stored rows, not save_person: the page must warn however such an admin got there
    # (`people add --no-password`, or a database from before passwords were required).
    with Session(eng) as session:
        session.add(PersonRow(name="ada", role="admin", password_hash=""))
        session.add(PersonRow(name="bo", role="annotator", password_hash=""))
        session.commit()
    eng.dispose()
    config = tmp_path / "workbench.toml"
    config.write_text("[roles.judge]\nmax_tokens = 512\n")
    srv = Server(db_url, tmp_path / "server.log", {"WORKBENCH_CONFIG": str(config)})
    srv.wait()
    yield srv
    srv.stop()


def test_a_password_less_admin_is_said_on_the_sidebar_and_settings(server, page):
    page.goto(f"{server.url}/settings")
    shown(page, lambda s: s.locator("h1", has_text="Settings"))
    assert_no_exception(page, server)
    for area in ("sidebar", "main"):
        alert = shown(page, lambda s, a=area: getattr(s, a).locator(
            "[data-testid='stAlertContentWarning']", has_text=WARNING))
        assert FIX in alert.inner_text()
        assert alert.locator("code", has_text=FIX).count() == 1  # the command, as code
    assert "bo is an admin" not in screen(page).content()  # bo has no password, but is no admin

    # What the warning says is so: the name alone signs in as admin.
    screen(page).sidebar.locator("[data-testid='stExpander'] summary", has_text="Sign in").click()
    form = shown(page, lambda s: s.sidebar.locator("[data-testid='stForm']"))
    form.get_by_label("Sign-in name").fill("ada")
    form.get_by_role("button", name="Sign in").click()
    # The suite's first browser test: its server's first sign-in (password hashing, the
    # session store) ran past 30 s on a fresh clone beside another job.
    shown(page, lambda s: s.sidebar.get_by_text("Signed in as ada (admin)"), timeout=90_000)
    shown(page, lambda s: s.sidebar.locator("[data-testid='stAlertContentWarning']",
                                            has_text=WARNING))
    assert page.external_requests == []
