"""A case's conversation, environment state and audited reply. Content is shown with
``st.text`` (never Markdown or HTML), so links, images and tags in it stay inert text."""

from __future__ import annotations

import json

import streamlit as st

_AVATARS = {"user": "user", "assistant": "assistant"}


def _role(turn) -> str:
    return getattr(turn, "role", None) or turn.get("role", "?")


def _turn(turn) -> None:
    role = _role(turn)
    content = getattr(turn, "content", None)
    if content is None:
        content = turn.get("content", "")
    with st.chat_message(_AVATARS.get(role, "assistant")):
        if role not in _AVATARS:
            st.caption(role)
        st.text(str(content))


def show_conversation(turns, height: int | None = 420) -> None:
    box = st.container(height=height) if height else st.container()
    with box:
        if not turns:
            st.caption("(no conversation history)")
        for t in turns:
            _turn(t)


def last_exchange(turns) -> int:
    """Where the turns the reply answers begin: the customer's last turn (and what followed
    it, e.g. tool results), or the last turn when no turn is the customer's."""
    users = [n for n, t in enumerate(turns) if _role(t) == "user"]
    return users[-1] if users else max(0, len(turns) - 1)


def show_recent(turns, caption: str = "The turn it answers") -> None:
    """Only the turns the reply answers (:func:`last_exchange`), unboxed: the Review card
    shows these beside the verdict and folds the rest away."""
    recent = list(turns)[last_exchange(turns):]
    if not recent:
        st.caption("(no conversation history)")
        return
    st.caption(caption)
    for t in recent:
        _turn(t)


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
