"""The SKILL version being annotated and its per-task queues of items."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from store import annotation as store
from store import repo


def pick_skill_version(eng: Engine):
    """The chosen SKILL and version number; stops the page when the store has no SKILL."""
    names = repo.skill_names(eng)
    if not names:
        st.info("No SKILLs in the store yet. Import an index: "
                "`workbench import fixtures/demo/index.json`.")
        st.stop()
    left, right = st.columns([3, 1])
    name = left.selectbox("SKILL", names, key="ann_skill")
    numbers = [v.version for v in repo.versions(eng, name)][::-1]
    version = right.selectbox("Version", numbers, key="ann_version")
    return repo.load_skill(eng, name, version), version


def ensure_queue(eng: Engine, task: str, skill_name: str, version: int, keys: list[str]) -> list[str]:
    """The task queue of a SKILL version, created on first visit (idempotent)."""
    queue = store.task_items(eng, task, skill_name, version)
    if set(keys) - set(queue):
        store.add_task_items(eng, task, skill_name, version, keys)
        queue = store.task_items(eng, task, skill_name, version)
    wanted = set(keys)
    return [k for k in queue if k in wanted]
