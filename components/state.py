"""Process-wide resources for the Streamlit app."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from store.db import database_url, make_engine


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return make_engine(url)


def engine() -> Engine:
    """The workbench database (``WORKBENCH_DB`` or ``.workbench/workbench.db``)."""
    return _engine(database_url())


def user_name() -> str:
    """Who is acting, for edit histories. A plain name for now; real auth can replace this."""
    return st.session_state.get("user_name") or "analyst"
