"""Who is signed in, and what they may do.

With OpenID Connect configured in ``.streamlit/secrets.toml`` (an ``[auth]`` section),
Streamlit's ``st.login`` signs people in and ``st.user`` says who they are; their role comes
from ``[workbench.roles]`` (e-mail = role) in the same file, ``analyst`` by default. Without
it, a local sign-in (name + role, in the sidebar) is kept in the session.

Nobody signed in locally is single-user mode: every action is allowed (a workbench on one
laptop has no one to keep out) and records carry "analyst". Once someone signs in, or
whenever OIDC is configured, the role decides (``workbench.roles``).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components.safe import md
from workbench.roles import ROLES, Actor, may, refusal

_KEY = "identity"


@dataclass(frozen=True)
class Identity:
    name: str
    role: str
    source: str  # "oidc" or "local"


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets.toml at all: Streamlit raises on first access
        return False


def _oidc_role(email: str) -> str:
    try:
        roles = st.secrets.get("workbench", {}).get("roles", {})
    except Exception:
        roles = {}
    role = roles.get(email, "analyst")
    return role if role in ROLES else "analyst"


def current() -> Identity | None:
    """The signed-in person, or ``None``."""
    if oidc_configured():
        user = st.user
        if not getattr(user, "is_logged_in", False):
            return None
        email = str(user.get("email") or "")
        return Identity(str(user.get("name") or email), _oidc_role(email), "oidc")
    data = st.session_state.get(_KEY)
    return Identity(data["name"], data["role"], "local") if data else None


def allowed(action: str) -> bool:
    """Whether the current person may do ``action`` (see the module docstring)."""
    who = current()
    if who is None:
        return not oidc_configured()
    return may(who.role, action)


def actor(name: str | None = None) -> Actor:
    """The acting identity to pass to a store write, which checks the role itself
    (``workbench.roles.require``): the signed-in person; nobody (refused) when OIDC is
    configured and nobody signed in; else single-user mode, recorded as ``name`` (the name
    typed on the page) or the session's name."""
    who = current()
    if who is not None:
        return Actor.signed_in(who.name, who.role)
    if oidc_configured():
        return Actor.nobody()
    return Actor.single_user(name or st.session_state.get("user_name") or "analyst")


def permitted(action: str) -> bool:
    """:func:`allowed`, and when it is ``False`` also :func:`explain_refusal` (say why)."""
    if allowed(action):
        return True
    explain_refusal(action)
    return False


def explain_refusal(action: str) -> None:
    """Say why ``action`` is not available (call when :func:`allowed` is ``False``)."""
    who = current()
    if who is None:
        st.info(f"Sign in (sidebar) to {action}.")
    else:
        st.info(md(refusal(who.role, action)))


def _sign_in() -> None:
    name = (st.session_state.get("id_name") or "").strip()
    if not name:
        st.session_state["id_flash"] = "Type your name to sign in."
        return
    role = st.session_state.get("id_role") or "analyst"
    st.session_state[_KEY] = {"name": name, "role": role}
    st.session_state["user_name"] = name  # append-only records (edits, decisions) carry it


def _sign_out() -> None:
    st.session_state.pop(_KEY, None)
    st.session_state.pop("user_name", None)


def sidebar() -> None:
    """Sign-in / signed-in box in the sidebar (called by app.py on every page)."""
    with st.sidebar:
        who, oidc = current(), oidc_configured()
        if who is not None:
            st.caption(md(f"Signed in as {who.name} ({who.role})"))
            st.button("Sign out", on_click=st.logout if oidc else _sign_out,
                      key="id_logout" if oidc else "id_signout")
            return
        if oidc:
            st.button("Sign in", on_click=st.login, key="id_login")
            return
        with st.expander("Sign in", expanded=False):
            if "id_flash" in st.session_state:
                st.error(st.session_state.pop("id_flash"))
            with st.form("id_form"):
                st.text_input("Sign-in name", key="id_name")
                st.selectbox("Role", ROLES, index=ROLES.index("analyst"), key="id_role",
                             help="author: edit graphs · analyst/reviewer: decide reviews · "
                                  "annotator: label · reviewer: adjudicate · admin: all")
                st.form_submit_button("Sign in", on_click=_sign_in)


def acting_name(label: str, key: str, default: str) -> str:
    """Who an append-only record (a decision, a graph version) is recorded for: the signed-in
    identity, shown and not editable; in single-user mode (nobody signed in, no OIDC) a name
    typed in a ``label`` field, remembered for the session. Returns "" when none is given."""
    who = current()
    if who is not None:
        st.caption(md(f"{label}: **{who.name}** ({who.role}, signed in)"))
        return who.name
    name = st.text_input(label, value=default, key=key).strip()
    if name:
        st.session_state["user_name"] = name
    return name

