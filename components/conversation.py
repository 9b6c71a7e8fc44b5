"""A case's conversation, environment state and audited reply. Content is shown with
``st.text`` (never Markdown or HTML), so links, images and tags in it stay inert text."""

from __future__ import annotations

import json

import streamlit as st

_AVATARS = {"user": "user", "assistant": "assistant"}


def show_conversation(turns, height: int | None = 420) -> None:
    box = st.container(height=height) if height else st.container()
    with box:
        if not turns:
            st.caption("(no conversation history)")
        for t in turns:
            role = getattr(t, "role", None) or t.get("role", "?")
            content = getattr(t, "content", None)
            if content is None:
                content = t.get("content", "")
            name = _AVATARS.get(role, "assistant")
            with st.chat_message(name):
                if role not in _AVATARS:
                    st.caption(role)
                st.text(str(content))


def show_state(background) -> None:
    if background is None or background == "":
        st.caption("(no environment state)")
    elif isinstance(background, dict | list):
        st.json(background, expanded=False)
    else:
        try:
            st.json(json.loads(background), expanded=False)
        except (TypeError, ValueError):
            st.text(str(background))


def show_response(text: str) -> None:
    with st.container(border=True):
        st.caption("Audited agent reply")
        st.text(text)
