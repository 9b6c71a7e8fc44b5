"""The retrieval evaluations on the Studies page: recall–tokens curves and length sweeps.

Reads the JSON files ``workbench evaluate retrieval|length-sweep`` wrote into the evaluations
folder (``WORKBENCH_EVAL_DIR``); the figures come from ``workbench.evaluate.curve_figure``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from components.safe import md
from workbench.evaluate.curve_figure import curve_figure, evaluations_dir, sweep_figure


def result_files(folder: Path) -> tuple[list[tuple[str, object]], list[str]]:
    """(file name, parsed JSON) of every readable ``*.json`` in ``folder``, and the names of
    those that are not readable JSON (the callers decide whether to say so), both by name."""
    readable: list[tuple[str, object]] = []
    unreadable: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            readable.append((path.name, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            unreadable.append(path.name)
    return readable, unreadable


def _load(folder: Path) -> list[tuple[str, dict]]:
    readable, unreadable = result_files(folder)
    for name in unreadable:
        st.warning(md(f"{name}: not readable JSON; skipped"))
    return [(name, data) for name, data in readable
            if isinstance(data, dict) and data.get("kind") in ("retrieval", "length-sweep")]


def show_evaluations(folder: Path | None = None) -> None:
    """One expander per result file: its figure(s) and table."""
    folder = folder or evaluations_dir()
    results = _load(folder)
    st.subheader("Retrieval: gold coverage at matched budgets")
    if not results:
        st.caption(md(f"No results in {folder}.") + " Run `workbench evaluate retrieval --index I "
                   "--cases C` or `workbench evaluate length-sweep DIR`.")
        return
    for i, (name, data) in enumerate(results):
        with st.expander(md(name), expanded=i == 0):
            try:
                if data["kind"] == "retrieval":
                    st.plotly_chart(curve_figure(data), key=f"ev_curve_{i}", width="stretch")
                    st.dataframe(pd.DataFrame(data["points"]).drop(columns=["errors"],
                                                                   errors="ignore"),
                                 hide_index=True)
                else:
                    st.plotly_chart(sweep_figure(data), key=f"ev_sweep_{i}", width="stretch")
                    st.plotly_chart(sweep_figure(data, "mean_tokens"), key=f"ev_sweep_tok_{i}",
                                    width="stretch")
                    st.dataframe(pd.DataFrame(data["rows"]).drop(columns=["errors"],
                                                                 errors="ignore"),
                                 hide_index=True)
            except (KeyError, TypeError, ValueError) as exc:
                st.warning(md(f"{name}: not a result of workbench evaluate ({type(exc).__name__})"))
