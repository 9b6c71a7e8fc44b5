"""Who is annotating on the Annotate page: sign-in by name, sign-out and flash messages."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components.safe import md
from store import annotation as store
from workbench.annotation.labels import ROLES, Annotator, LabelError


def signed_in() -> Annotator | None:
    """The annotator of this browser session. Sign-in by name for now: real authentication
    (e.g. ``st.user``) only has to fill ``st.session_state["annotator"]`` the same way."""
    data = st.session_state.get("annotator")
    return Annotator(data["name"], data["role"]) if data else None


def _sign_in(eng: Engine) -> None:
    name = (st.session_state.get("ann_name_input") or "").strip()
    role = st.session_state.get("ann_role_input") or "annotator"
    if not name:
        st.session_state["ann_flash"] = ("error", "Type your name to sign in.")
        return
    try:
        store.add_annotator(eng, name, role)
    except LabelError as exc:
        st.session_state["ann_flash"] = ("error", str(exc))
        return
    st.session_state["annotator"] = {"name": name, "role": role}
    st.session_state["user_name"] = name  # edit histories elsewhere record the same person


def _sign_out() -> None:
    st.session_state.pop("annotator", None)
    st.session_state.pop("user_name", None)


def flash() -> None:
    """Show the message a callback left; messages may quote user input, so it is escaped."""
    kind, text = st.session_state.pop("ann_flash", (None, None))
    if kind == "error":
        st.error(md(text))
    elif kind == "success":
        st.success(md(text))


def sign_in_form(eng: Engine) -> None:
    """The sign-in form, after the message a failed attempt left."""
    flash()
    with st.form("ann_signin"):
        st.text_input("Your name", key="ann_name_input", placeholder="e.g. Ada")
        st.selectbox("Role", ROLES, key="ann_role_input",
                     help="Annotators label blind; reviewers see every label and adjudicate.")
        st.form_submit_button("Sign in", on_click=_sign_in, args=(eng,))
    st.caption("Press Enter in the name field to sign in.")


def signed_in_bar(who: Annotator) -> None:
    """Who is signed in, with the sign-out button."""
    top_left, top_right = st.columns([4, 1])
    top_left.text(f"Signed in as {who.name} ({who.role})")
    top_right.button("Sign out", on_click=_sign_out, key="ann_signout")
