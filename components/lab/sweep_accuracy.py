"""The judged length sweep on the Studies page: accuracy against SKILL length, one line per
strategy (the second paper's RQ3 figure), and violation-F1 beside it.

Draws the ``workbench evaluate length-sweep --judge`` results found in the evaluations
folder (``WORKBENCH_EVAL_DIR``); results without a judged sample are left to
``components.lab.retrieval_curves`` (coverage and tokens). Figures come from
``workbench.evaluate.curve_figure``; names from files are escaped there and here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import streamlit as st

from components.glossary import column_help
from components.lab.retrieval_curves import result_files
from components.safe import md
from workbench.evaluate.curve_figure import evaluations_dir, sweep_figure

COLUMNS = {"length": "target length", "skill_tokens": "SKILL tokens", "strategy": "strategy",
           "judged_cases": "judged cases", "acc": "ACC", "f1": "violation-F1",
           "coverage": "gold in context"}
# Recorded by sweeps since issue 46 (older results lack them): shown when present.
OPTIONAL = {"acc_interval": "ACC, 95 % interval", "judge_time": "model time"}


# The measured sweep that ships with the workbench (docs/evaluations), shown after the
# evaluations folder's own results (a file of the same name in the folder wins).
BUNDLED = Path(__file__).resolve().parents[2] / "docs" / "evaluations"

FIGURE_WIDTH = 360  # px: two figures a row at 1280 px, one at 800


def _fitted(fig):
    """``fig`` with its title short ("accuracy (ACC) as the SKILL grows"; the cases per
    point go to the caption), the legend under the plot, margins grown to the labels."""
    title = re.sub(r" \(\d+ judged cases per point\)$", "", str(fig.layout.title.text or ""))
    fig.update_layout(title={"text": title, "x": 0, "xanchor": "left"},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top"})
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def _table(rows: list[dict]) -> pd.DataFrame:
    """The rows as shown: the judged figures, and the interval and model time when recorded."""
    from workbench import words

    frame = pd.DataFrame(rows)
    table = frame[list(COLUMNS)].rename(columns=COLUMNS)
    # Numbers as a person reads them (no 0.8333333333333334 on screen, issue 44).
    for column, decimals in (("SKILL tokens", 0), ("ACC", 3), ("violation-F1", 3),
                             ("gold in context", 3), ("target length", 0), ("judged cases", 0)):
        table[column] = [words.number(v, decimals) for v in table[column]]
    if {"acc_low", "acc_high"} <= set(frame.columns):
        table[OPTIONAL["acc_interval"]] = [
            words.MISSING if words.is_missing(lo) or words.is_missing(hi)
            else f"{words.number(lo)} to {words.number(hi)}"
            for lo, hi in zip(frame["acc_low"], frame["acc_high"], strict=True)]
    if "judge_seconds" in frame.columns:  # words.duration says "–" for a missing time
        table[OPTIONAL["judge_time"]] = [words.duration(s) for s in frame["judge_seconds"]]
    return table


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
    if folder is None and BUNDLED.is_dir():
        mine = {name for name, _ in results}
        results += [(f"{name} (bundled)", data) for name, data in judged_sweeps(BUNDLED)
                    if name not in mine]
    if not results:
        return
    st.subheader("Length sweep: accuracy as the SKILL grows")
    st.caption("Each point judges the same sample of cases with the SKILL rebuilt at that "
               "length. ACC counts a case without a verdict as wrong.")
    for i, (name, data) in enumerate(results):
        with st.expander(md(f"{name}: accuracy by length"), expanded=i == 0):
            try:
                # A row that wraps, titles that fit: two columns cut "violation-F1 as the
                # SKILL grows (N judged cases per point)" and squeezed the legend (issue 44).
                figures = st.container(horizontal=True, wrap=True, gap="medium")
                for metric in ("acc", "f1"):
                    figures.plotly_chart(_fitted(sweep_figure(data, metric)),
                                         key=f"ev_sweep_{metric}_{i}", width=FIGURE_WIDTH)
                judged = max((r.get("judged_cases") or 0 for r in data["rows"]), default=0)
                st.caption(f"{judged} judged cases per point.")
                table = _table(data["rows"])
                st.dataframe(table, hide_index=True, column_config=column_help(table.columns))
            except (KeyError, TypeError, ValueError) as exc:
                st.warning(md(f"{name}: not a judged length sweep ({type(exc).__name__})"))
