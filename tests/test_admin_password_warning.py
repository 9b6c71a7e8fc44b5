"""An admin without a password is said plainly (issue #45, item 3): the sidebar's sign-in
area and the Settings page name each such admin, what that means and the command that fixes
it; nothing is said once every admin has a password."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.identity import password_warning
from tests.test_page_settings import PAGE as SETTINGS
from tests.test_page_settings import env  # noqa: F401  (fixture)

ADA = ("ada is an admin without a password: anyone who types that name signs in as admin. "
       "Set one with `workbench people add ada --role admin --password-env VAR --as ada`.")


def roster(url: str, *people: tuple[str, str, str]) -> None:
    """Put (name, role, password hash) rows on the roster as they are stored. Written as rows:
    the store is to refuse a password-less admin unless asked, and this is what the
    page must warn about however it got there."""
    from sqlmodel import Session

    from store.db import make_engine
    from store.people import PersonRow

    eng = make_engine(url)
    with Session(eng) as session:
        for name, role, hashed in people:
            session.add(PersonRow(name=name, role=role, password_hash=hashed))
        session.commit()
    eng.dispose()


def test_the_warning_names_the_admin_the_risk_and_the_fix():
    assert password_warning("ada") == ADA


def test_a_name_is_escaped_and_quoted_for_the_shell():
    text = password_warning("a*b [x](http://e.test) c")
    assert text.startswith(r"a\*b \[x\]\(http\://e\.test\) c is an admin")  # no link
    assert "`workbench people add 'a*b [x](http://e.test) c' --role admin" in text
    # A backtick would end the code span early: then the command is escaped like the prose.
    tick = password_warning("a`b")
    assert "`workbench" not in tick and r"workbench people add 'a\`b'" in tick


def _sidebar_app() -> None:
    from components import identity
    from pages._sign_in import backend

    sign_in = backend()
    identity.establish(sign_in)
    identity.sidebar(sign_in)


@pytest.fixture
def db_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'people.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    return url


def test_the_sidebar_warns_about_each_admin_without_a_password(db_url):
    roster(db_url, ("ada", "admin", ""), ("bo", "admin", "x"), ("cy", "annotator", ""))
    at = AppTest.from_function(_sidebar_app, default_timeout=60).run()
    assert not at.exception
    assert [w.value for w in at.sidebar.warning] == [ADA]  # not bo (password), not cy (no admin)


def test_no_warning_when_every_admin_has_a_password(db_url):
    roster(db_url, ("bo", "admin", "x"), ("cy", "annotator", ""))
    at = AppTest.from_function(_sidebar_app, default_timeout=60).run()
    assert not at.exception and not at.sidebar.warning


def test_settings_says_so_too(env, tmp_path):  # noqa: F811
    import os

    roster(os.environ["WORKBENCH_DB"], ("ada", "admin", ""))
    at = AppTest.from_file(SETTINGS, default_timeout=60).run()
    assert not at.exception
    assert [w.value for w in at.warning] == [ADA]
