"""Review queue: audit a dataset (or load traces), then confirm, overturn or mark "right
verdict, wrong rule" on flagged cases, strategy disagreements and gold mismatches, one by
one or many at once, with undo, progress and analyst-judge agreement. Filters, sort and the
case shown live in the address; analysts save named views. Decisions are append-only
records (``store.review``).

Sections: ``pages/_review_run.py`` (audit, load), ``_review_view.py`` (filters, URL, saved
views), ``_review_queue.py`` (the dataset and its queue, alerts and export),
``_review_decide.py`` (decisions, undo, bulk)."""

from __future__ import annotations

import streamlit as st

from components import identity
from pages._review_queue import queue_panel
from pages._review_run import audit_panel, load_panel
from pages._state import engine, user_name
from store import audit_repo

st.title("Review queue")
eng = engine()

reviewer = identity.acting_name("Reviewer", "rv_reviewer", user_name())
if not reviewer:
    # With roles configured there is no name field here: the sign-in is on the sidebar.
    st.warning("Sign in on the sidebar to record decisions." if identity.roles_configured()
               else "Enter your name above to record decisions.")
datasets = audit_repo.trace_datasets(eng)
ways_in_on_top = not datasets  # drawn once per run: their widgets have fixed keys
if ways_in_on_top:
    with st.expander("Audit a dataset", expanded=True):
        audit_panel(eng)
    with st.expander("Load a traces file"):
        load_panel(eng)
    datasets = audit_repo.trace_datasets(eng)
if not datasets:
    st.info("No audit traces yet: audit a dataset or load a traces file above.")
    st.stop()
# The dataset, its view and queue, its alerts (what the alert rules fired) and its export
# (OTLP / Langfuse / Phoenix files): one fragment, so a key press reruns only that.
queue_panel(eng, datasets, reviewer)
# Ways in below the queue: above it they pushed the case card below the fold (issue 44).
if not ways_in_on_top:
    st.divider()
    with st.expander("Audit a dataset"):
        audit_panel(eng)
    with st.expander("Load a traces file"):
        load_panel(eng)
