"""The judged length sweep on the Evaluate page: accuracy against SKILL length, one line per
strategy (the second SkillCDG paper's RQ3 figure), and violation-F1 beside it.

Draws the ``workbench evaluate length-sweep --judge`` results found in the evaluations
folder (``WORKBENCH_EVAL_DIR``); results without a judged sample are left to
``components.retrieval_curves`` (coverage and tokens). Figures come from
``workbench.evaluate.curve_figure``; names from files are escaped there and here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components.glossary import column_help
from components.retrieval_curves import result_files
from components.safe import md
from workbench.evaluate.curve_figure import evaluations_dir, sweep_figure

COLUMNS = {"length": "target length", "skill_tokens": "SKILL tokens", "strategy": "strategy",
           "judged_cases": "judged cases", "acc": "ACC", "f1": "violation-F1",
           "coverage": "gold in context"}


def judged_sweeps(folder: Path) -> list[tuple[str, dict]]:
    """(file name, result) of every readable length sweep with judged rows, by name."""
    out = []
    readable, _unreadable = result_files(folder)  # the retrieval section warns about those
    for name, data in readable:
        if not isinstance(data, dict):  # any JSON may sit in the folder: a list is no sweep
            continue
        rows = data.get("rows")
        if (data.get("kind") == "length-sweep" and isinstance(rows, list)
                and any(isinstance(r, dict) and r.get("judged_cases") for r in rows)):
            out.append((name, data))
    return out


def show_sweep_accuracy(folder: Path | None = None) -> None:
    """One expander per judged sweep: ACC and violation-F1 against the SKILL length reached,
    and the rows as a table. Nothing is drawn when no sweep was judged."""
    results = judged_sweeps(folder or evaluations_dir())
    if not results:
        return
    st.subheader("Length sweep: accuracy as the SKILL grows")
    st.caption("Each point judges the same sample of cases with the SKILL rebuilt at that "
               "length. ACC counts a case without a verdict as wrong.")
    for i, (name, data) in enumerate(results):
        with st.expander(md(f"{name}: accuracy by length"), expanded=i == 0):
            try:
                cols = st.columns(2)
                cols[0].plotly_chart(sweep_figure(data, "acc"), key=f"ev_sweep_acc_{i}",
                                     width="stretch")
                cols[1].plotly_chart(sweep_figure(data, "f1"), key=f"ev_sweep_f1_{i}",
                                     width="stretch")
                table = pd.DataFrame(data["rows"])[list(COLUMNS)].rename(columns=COLUMNS)
                st.dataframe(table, hide_index=True, column_config=column_help(table.columns))
            except (KeyError, TypeError, ValueError) as exc:
                st.warning(md(f"{name}: not a judged length sweep ({type(exc).__name__})"))
