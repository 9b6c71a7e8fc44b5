"""URL state and links between pages: a page that shows one thing keeps it in the address
(``/replay?dataset=demo&case=mor-007``), so reload, back and a pasted link open the same view.

Streamlit widgets own their value through ``st.session_state``; the URL is a second source.
``adopt`` copies a URL value into the widget's state *before* the widget is drawn, but only
when the URL changed since this session last wrote it (a pasted link, back/forward), so a
user's new choice is never overwritten by the stale address on the rerun it causes.
``publish`` writes the shown value back after the widget is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

import streamlit as st

_WRITTEN = "_url_written_{}"


def adopt(param: str, widget_key: str, options: Sequence[object]) -> str | None:
    """Select the option the URL names in widget ``widget_key``. Returns the URL's value when
    it names no option (the caller says so), else ``None``."""
    wanted = st.query_params.get(param)
    if wanted is None or st.session_state.get(_WRITTEN.format(param)) == wanted:
        return None
    by_text = {str(o): o for o in options}
    if wanted not in by_text:
        st.session_state[_WRITTEN.format(param)] = wanted  # explained once, not on every rerun
        return wanted
    st.session_state[widget_key] = by_text[wanted]
    return None


def fresh(param: str) -> str | None:
    """The URL's ``param`` when it changed since this session last wrote it (a pasted link,
    back/forward), else ``None``; for state that is not a widget (e.g. a queue position)."""
    wanted = st.query_params.get(param)
    if wanted is None or st.session_state.get(_WRITTEN.format(param)) == wanted:
        return None
    st.session_state[_WRITTEN.format(param)] = wanted
    return wanted


def publish(param: str, value: object | None) -> None:
    """Show ``value`` in the address as ``?param=value`` (removed when ``None``)."""
    if value is None:
        if param in st.query_params:
            del st.query_params[param]
        st.session_state.pop(_WRITTEN.format(param), None)
        return
    text = str(value)
    if st.query_params.get(param) != text:
        st.query_params[param] = text
    st.session_state[_WRITTEN.format(param)] = text


def page_link(url_path: str, params: Mapping[str, object | None]) -> str:
    """A relative link to a page of this app with its URL state, e.g.
    ``page_link("replay", {"dataset": "demo", "case": "mor-007"})`` → ``/replay?dataset=…``.
    Empty values are left out."""
    query = urlencode({k: str(v) for k, v in params.items() if v not in (None, "")})
    return f"/{url_path}" + (f"?{query}" if query else "")


def replay_link(dataset: str, case_id: str, run: str | None = None) -> str:
    return page_link("replay", {"dataset": dataset, "case": case_id, "run": run})


def graph_link(skill: str, rule: str | None = None, version: int | None = None) -> str:
    return page_link("graph", {"skill": skill, "version": version, "rule": rule})
