"""The shared queue navigation (components/queue_nav.py): position kept in range, Previous
and Next with their shortcuts, and flash messages shown once and escaped."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

SCRIPT = """
import streamlit as st
from components import queue_nav
size = st.session_state.get("size", 3)
pos = queue_nav.position("q_pos", size)
st.text(f"at {pos}")
queue_nav.show_flash("q_flash")
queue_nav.nav_buttons("q", "q_pos", pos, size)
st.button("decide", key="q_decide", on_click=lambda: (
    queue_nav.leave_flash("q_flash", "success", "Saved **[x](javascript:alert(1))** <b>"),
    queue_nav.advance("q_pos", size)))
"""


def test_previous_next_and_their_ends():
    at = AppTest.from_string(SCRIPT).run()
    assert at.text[0].value == "at 0"
    assert at.button(key="q_prev").disabled and not at.button(key="q_next").disabled
    assert (at.button(key="q_prev").proto.shortcut, at.button(key="q_next").proto.shortcut) == (
        "k", "j")
    at.button(key="q_next").click().run()
    at.button(key="q_next").click().run()
    assert at.text[0].value == "at 2" and at.button(key="q_next").disabled
    at.button(key="q_prev").click().run()
    assert at.text[0].value == "at 1"


def test_a_shrunk_queue_keeps_the_position_inside_it():
    at = AppTest.from_string(SCRIPT)
    at.session_state["q_pos"] = 7  # e.g. a filter left fewer items than before
    at.run()
    assert at.text[0].value == "at 2" and at.session_state["q_pos"] == 2


def test_flash_is_shown_once_escaped_and_decisions_advance():
    at = AppTest.from_string(SCRIPT).run()
    at.button(key="q_decide").click().run()
    assert at.text[0].value == "at 1"
    shown = at.success[0].value
    assert "](" not in shown and "**" not in shown and "<b>" not in shown
    assert shown.replace("\\", "") == "Saved **[x](javascript:alert(1))** <b>"
    at.run()  # the next run (e.g. a filter change) does not repeat it
    assert not at.success
    at.button(key="q_decide").click().run()
    at.button(key="q_decide").click().run()  # the last item stays the last
    assert at.text[0].value == "at 2"
