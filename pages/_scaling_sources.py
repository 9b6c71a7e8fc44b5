"""Scaling page: an outcomes table built from audit runs stored in the workbench database
(``workbench audit --store DATASET``, ``workbench import-traces``), one run per judge."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components.errors import show_error
from pages._policy_cache import policy_index
from store import audit_repo
from workbench.export.sheets import frame_csv
from workbench.scaling import OutcomesError, outcomes_from_records
from workbench.scaling.from_traces import TracesError, outcomes_from_runs


def stored_runs_outcomes(engine: Engine) -> bytes | None:
    """Pick a dataset, its runs and each run's judge size; the outcomes as CSV bytes, or
    None (with the reason shown) until they can be built."""
    names = [d for d in audit_repo.datasets(engine) if audit_repo.runs(engine, d)]
    if not names:
        st.info(
            "No stored audit runs yet. Audit the same cases with each judge and store them "
            "(`workbench audit ... --store DATASET --run-id NAME`), then come back."
        )
        return None
    dataset = st.selectbox("Dataset", names, key="scaling_store_dataset")
    run_ids = audit_repo.runs(engine, dataset)
    chosen = st.multiselect(
        "Audit runs, one per judge", run_ids, default=run_ids[:2], key="scaling_store_runs"
    )
    if not chosen:
        st.info("Choose the audit runs to compare (one per judge).")
        return None
    cols = st.columns(min(len(chosen), 4))
    sizes = {}
    for i, run in enumerate(chosen):
        sizes[run] = cols[i % len(cols)].number_input(
            f"Judge size of {run} (B)",
            min_value=0.01,
            value=1.5,
            key=f"scaling_store_size_{run}",
            help="The judge's parameter count in billions.",
        )
    traces = {run: audit_repo.load_traces(engine, run_id=run, dataset=dataset) for run in chosen}
    strategies = sorted({t.strategy for ts in traces.values() for t in ts})
    strategy = None
    if len(strategies) > 1:
        strategy = st.selectbox("Strategy", strategies, key="scaling_store_strategy")
    index = policy_index(engine)
    if index is None:
        st.error("The database holds no SKILLs, so complexity cannot be computed. Import the index.")
        return None
    st.caption(
        "Complexity comes from the SKILLs' current versions in the database; if they were edited "
        "since the runs, re-audit or import the index the runs used."
    )
    try:
        rows = outcomes_from_runs(
            [(traces[run], float(sizes[run])) for run in chosen],
            audit_repo.load_cases(engine, dataset),
            index,
            dataset,
            strategy=strategy,
        )
        table = outcomes_from_records(rows)
    except (TracesError, OutcomesError) as exc:
        show_error(exc, "These runs cannot be turned into an outcomes table:", block=True)
        return None
    data = frame_csv(table).encode("utf-8")
    st.download_button(
        "Download outcomes CSV",
        data,
        file_name=f"{dataset}-outcomes.csv",
        mime="text/csv",
        key="scaling_store_download",
    )
    return data
