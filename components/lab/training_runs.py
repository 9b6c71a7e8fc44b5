"""Training runs (``workbench train grpo|opd``): a table of run folders and their reward and
KL curves, read from each run's ``metrics.jsonl``. Read-only; training runs from the CLI."""

from __future__ import annotations

import html

import pandas as pd
import plotly.express as px
import streamlit as st

from workbench.settings import TRAIN_RUNS
from workbench.train.runs import DEFAULT_RUNS_ROOT, evaluation_rows, list_runs, read_metrics

CURVES = ("reward_mean", "kl", "verdict_accuracy", "zero_advantage_share", "gated_share")


def training_section(key: str = "train") -> None:
    with st.expander("Training runs", expanded=False):
        root = st.text_input(
            "Runs folder", TRAIN_RUNS.read(default=str(DEFAULT_RUNS_ROOT)),
            key=f"{key}_root", help="the folder holding `workbench train --run-dir` folders",
        )
        runs = list_runs(root)
        if not runs:
            st.caption("No training runs there. Start one with `workbench train grpo` or "
                       "`workbench train opd --run-dir <folder>`.")
            return
        table = pd.DataFrame(runs)
        st.dataframe(table.drop(columns=["path"]), hide_index=True, width="stretch",
                     key=f"{key}_table")
        names = [r["run"] for r in runs]
        chosen = st.selectbox("Run", names, key=f"{key}_run")
        path = runs[names.index(chosen)]["path"]
        before_after = evaluation_rows(path)
        if before_after:
            st.dataframe(pd.DataFrame(before_after), hide_index=True, width="stretch",
                         key=f"{key}_evaluation",
                         column_config={
                             "gold rules in context": st.column_config.NumberColumn(
                                 help="mean share of each case's gold governing rules in the "
                                 "closure the model's keywords lead to", format="%.3f"),
                             "every gold rule in context": st.column_config.NumberColumn(
                                 help="share of cases whose context holds all their gold rules",
                                 format="%.3f"),
                         })
        metrics = pd.DataFrame(read_metrics(path))
        shown = [c for c in CURVES if c in metrics.columns and metrics[c].notna().any()]
        if metrics.empty or not shown:
            st.caption("This run has logged no steps yet.")
            return
        long = metrics.melt(id_vars=["step"], value_vars=shown, var_name="metric").dropna()
        # Plotly reads tags in titles: the run name is escaped to show as the text it is.
        fig = px.line(long, x="step", y="value", color="metric", markers=True,
                      title=html.escape(chosen))
        st.plotly_chart(fig, key=f"{key}_curves", width="stretch")
