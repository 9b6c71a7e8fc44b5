"""Process-wide resources for the Streamlit app."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

import streamlit as st
from sqlalchemy.engine import Engine

from store.db import database_url, make_engine
from store.llm_cache import persistent_gateway
from workbench.llm import Gateway, LlmConfig, load_config
from workbench.settings import PREFIX


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return make_engine(url)


def engine() -> Engine:
    """The workbench database (``WORKBENCH_DB`` or ``.workbench/workbench.db``)."""
    return _engine(database_url())


def config_fingerprint(config: LlmConfig, env: Mapping[str, str] | None = None) -> str:
    """What makes two gateways differ: every setting of the configuration and the
    ``WORKBENCH_*`` variables (record/replay mode, recordings, attached servers). API keys
    are read at call time (``resolve_api_key``), so a new key needs no new gateway."""
    env = os.environ if env is None else env
    settings = sorted((k, v) for k, v in env.items() if k.startswith(PREFIX)
                      and not k.endswith("_API_KEY"))
    return hashlib.sha256(repr((config, settings)).encode()).hexdigest()


# One entry: a new configuration evicts the old gateway, and eviction closes it (its thread
# pool), instead of a new gateway per click that nobody closes.
@st.cache_resource(show_spinner=False, max_entries=1, on_release=lambda gateway: gateway.close())
def _gateway(url: str, fingerprint: str, _config: LlmConfig) -> Gateway:
    return persistent_gateway(_engine(url), _config)


def model_gateway(config: LlmConfig | None = None) -> Gateway:
    """The model gateway of the app (cache, usage and endpoint logs in the workbench
    database), built once per configuration and shared by every page and session (it is
    thread-safe). Callers must not close it. Raises ``LlmConfigError`` for a broken
    configuration, as ``load_config`` does."""
    config = config or load_config()
    return _gateway(database_url(), config_fingerprint(config), config)


def user_name() -> str:
    """Who is acting, for edit histories. A plain name for now; real auth can replace this."""
    return st.session_state.get("user_name") or "analyst"
