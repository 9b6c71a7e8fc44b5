"""Review queue: audit a dataset (or load traces), then confirm, overturn or mark "right
verdict, wrong rule" on flagged cases, strategy disagreements and gold mismatches, one by
one or many at once, with undo, progress and analyst-judge agreement. Filters, sort and the
case shown live in the address; analysts save named views. Decisions are append-only
records (``store.review``).

Sections: ``pages/_review_run.py`` (audit, load), ``_review_view.py`` (filters, URL, saved
views), ``_review_queue.py`` (the queue), ``_review_decide.py`` (decisions, undo, bulk)."""

from __future__ import annotations

import streamlit as st

from components import identity, links
from pages._review_alerts import alerts_panel
from pages._review_export import export_panel
from pages._review_queue import queue_panel
from pages._review_run import audit_panel, load_panel, safe_key
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
top = st.columns([1, 2])
links.adopt("dataset", "rv_dataset", datasets)
dataset = top[0].selectbox("Dataset", datasets, key="rv_dataset")
links.publish("dataset", dataset)
runs = top[1].multiselect("Runs", audit_repo.runs(eng, dataset), key=f"rv_runs_{safe_key(dataset)}",
                          placeholder="all runs (newest trace per case and strategy)")
queue_panel(eng, dataset, runs, reviewer)
alerts_panel(eng, dataset, reviewer)  # what the alert rules fired on this dataset
export_panel(eng, dataset, runs)  # the verdicts as OTLP / Langfuse / Phoenix files
# Ways in below the queue: above it they pushed the case card below the fold (issue 44).
if not ways_in_on_top:
    st.divider()
    with st.expander("Audit a dataset"):
        audit_panel(eng)
    with st.expander("Load a traces file"):
        load_panel(eng)
