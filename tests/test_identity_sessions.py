"""Issue 35 item 1 at the page level (AppTest, real store): who a run is for is decided by
``identity.establish`` from the session's (or the browser's) token; with a roster nobody
signed in may change nothing; a lapsed sign-in is said, not silently replaced by single-user
mode; OIDC is read from ``[auth]`` in the secrets, its role from the roster first."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.identity import oidc_role
from store import people
from workbench.identity.roles import COMMAND_LINE, Actor

SCRIPT = """
import streamlit as st
from components import identity
from pages._sign_in import backend
b = backend()
identity.establish(b)
identity.sidebar(b)
who = identity.current()
st.text(f"who={who.name + '/' + who.role if who else None}")
st.text(f"edit={identity.allowed('edit graphs')}")
st.text(f"actor={identity.actor().role}")
"""


def _run(token: str | None = None, secrets: dict | None = None) -> AppTest:
    at = AppTest.from_string(SCRIPT, default_timeout=60)
    if token:
        at.session_state["identity_token"] = token  # what the browser's cookie brings
    for key, value in (secrets or {}).items():
        at.secrets[key] = value
    return at.run()


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_no_roster_nobody_signed_in_is_single_user(empty_db):
    assert _texts(_run()) == ["who=None", "edit=True", "actor=single user"]


def test_a_token_signs_the_run_in_and_a_revoked_one_is_said(empty_db):
    live = people.sign_in(empty_db, "alice", "annotator")
    at = _run(live.token)
    assert _texts(at) == ["who=alice/annotator", "edit=False", "actor=annotator"]
    people.sign_out(empty_db, live.token)  # in another tab
    at = _run(live.token)
    assert _texts(at)[0] == "who=None"
    assert any("you were signed out" in w.value for w in at.warning)


def test_with_a_roster_nobody_signed_in_changes_nothing(empty_db):
    people.save_person(empty_db, "ada", "admin", actor=COMMAND_LINE)
    people.save_person(empty_db, "ann", "annotator", actor=Actor.signed_in("ada", "admin"))
    at = _run()
    assert _texts(at) == ["who=None", "edit=False", "actor=None"]  # never single-user mode
    assert any("change nothing" in c.value for c in at.caption)
    assert [s.label for s in at.selectbox if s.label == "Role"] == []  # the roster decides
    ann = people.sign_in(empty_db, "ann", "admin")  # the role asked for is ignored
    assert _texts(_run(ann.token))[:2] == ["who=ann/annotator", "edit=False"]
    people.save_person(empty_db, "ann", "author", actor=Actor.signed_in("ada", "admin"))
    at = _run(ann.token)  # a role change ends the sign-ins it made
    assert _texts(at)[:2] == ["who=None", "edit=False"]


def test_oidc_is_read_from_the_secrets_and_offers_st_login(empty_db):
    at = _run(secrets={"auth": {"redirect_uri": "http://localhost:8501/oauth2callback",
                                "cookie_secret": "x" * 32, "client_id": "id",
                                "client_secret": "secret",
                                "server_metadata_url": "https://idp.example/.well-known/"
                                                       "openid-configuration"}})
    assert _texts(at) == ["who=None", "edit=False", "actor=None"]  # nobody: least privilege
    assert [b.label for b in at.button] == ["Sign in"]  # st.login, not the local form
    assert [t for t in at.text_input if t.label == "Sign-in name"] == []


def test_an_oidc_role_comes_from_the_roster_first_then_the_secrets():
    assert oidc_role("a@x", "author", {"a@x": "admin"}, roster=True) == "author"
    assert oidc_role("a@x", None, {"a@x": "admin"}, roster=True) == "admin"
    assert oidc_role("b@x", None, {"a@x": "admin"}, roster=False) == "viewer"  # a list exists
    assert oidc_role("b@x", None, {}, roster=True) == "viewer"
    assert oidc_role("b@x", None, {}, roster=False) == "analyst"  # no list at all: as before
    assert oidc_role("b@x", None, {"b@x": "boss"}, roster=False) == "viewer"


def test_only_a_token_reaches_the_cookie():
    from components import session_cookie

    for bad in ("a;b", "x\nSet-Cookie: y", "a b", ""):
        if bad:
            with pytest.raises(ValueError, match="base64url"):
                session_cookie.keep(bad, 60)
