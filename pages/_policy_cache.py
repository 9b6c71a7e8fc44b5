"""Cached policy objects for the audit pages (rebuilt when the store's versions change)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from store import repo
from workbench.audit import AuditIndex
from workbench.graph import PolicyIndex


def _versions_key(engine: Engine) -> tuple:
    return tuple((n, repo.get_version(engine, n).version) for n in repo.skill_names(engine))


@st.cache_resource(show_spinner=False, max_entries=4)
def _indexes(url: str, key: tuple, _engine: Engine) -> tuple[PolicyIndex, AuditIndex]:
    index = repo.export_index(_engine, [n for n, _ in key])
    return index, AuditIndex(index)


def policy_index(engine: Engine) -> PolicyIndex | None:
    key = _versions_key(engine)
    if not key:
        return None
    return _indexes(str(engine.url), key, engine)[0]


def audit_index(engine: Engine) -> AuditIndex:
    return _indexes(str(engine.url), _versions_key(engine), engine)[1]
