"""Verdicts from the judge's activations on the Evaluate page: how well each score ranks
violations (AUROC with its 95 % interval, out of fold) and how many labelled cases a policy
needs (the learning curve).

Reads results of ``bench/activation_scorers.py --json`` (``"kind": "activation-scorers"``)
from the evaluations folder and the bundled ``docs/evaluations`` folder. Names and figures
from files are shown as text, never as HTML.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.safe import md
from workbench.settings import evaluations_dir

KIND = "activation-scorers"
BUNDLED = Path(__file__).resolve().parent.parent / "docs" / "evaluations"
NAMES = {"verbal probability": "the judge's own probability",
         "whitening": "whitening (compliant cases only)",
         "probe": "linear probe",
         "probe + verbal": "probe and the judge's probability",
         "chosen by CV": "chosen by cross-validation"}


def study_results(*folders: Path) -> list[tuple[str, dict]]:
    out, seen = [], set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            if path.name in seen:
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("kind") == KIND and isinstance(data.get("figures"), dict):
                seen.add(path.name)
                out.append((path.name, data))
    # the largest sample first (it is the one expanded): a later, larger study of the same
    # cases is the better figure, whatever its file is called
    out.sort(key=lambda item: -item[1]["n"] if isinstance(item[1].get("n"), int) else 0)
    return out


def auroc_figure(data: dict) -> go.Figure:
    rows = [(NAMES.get(k, k), v) for k, v in data["figures"].items()]
    fig = go.Figure(go.Bar(
        x=[v["auroc"] for _, v in rows], y=[html.escape(n) for n, _ in rows], orientation="h",
        error_x={"type": "data", "symmetric": False,
                 "array": [v["high"] - v["auroc"] for _, v in rows],
                 "arrayminus": [v["auroc"] - v["low"] for _, v in rows]},
        hovertemplate="%{y}: AUROC %{x:.2f}<extra></extra>"))
    fig.add_vline(x=0.5, line_dash="dot", annotation_text="chance", annotation_position="top")
    fig.update_layout(title="How well each score ranks violations (AUROC, 95 % interval)",
                      xaxis={"range": [0.3, 1.0], "title": "AUROC (out of fold)"},
                      yaxis={"autorange": "reversed", "automargin": True},
                      height=300, margin={"l": 10, "r": 20, "t": 60, "b": 50})
    return fig


def curve_figure(data: dict) -> go.Figure:
    rows = data.get("learning_curve") or []
    fig = go.Figure(go.Scatter(
        x=[r["labelled"] for r in rows], y=[r["auroc"] for r in rows], mode="lines+markers",
        error_y={"type": "data", "symmetric": False,
                 "array": [r["high"] - r["auroc"] for r in rows],
                 "arrayminus": [r["auroc"] - r["low"] for r in rows]},
        hovertemplate="%{x} labelled cases: AUROC %{y:.2f}<extra></extra>"))
    verbal = data["figures"].get("verbal probability", {}).get("auroc")
    if verbal is not None:
        fig.add_hline(y=verbal, line_dash="dot", annotation_text="the judge's own probability",
                      annotation_position="bottom right")
    fig.update_layout(title="How many labelled cases the scorer needs",
                      xaxis={"title": "labelled cases the probe is fitted on"},
                      yaxis={"title": "AUROC on other conversations", "range": [0.3, 1.0]},
                      height=320, margin={"l": 10, "r": 20, "t": 60, "b": 50})
    return fig


def figures_table(data: dict) -> pd.DataFrame:
    rows = []
    for name, v in data["figures"].items():
        g = v.get("guarantee") or {}
        rows.append({
            "score": NAMES.get(name, name),
            "AUROC": f"{v['auroc']:.2f} ({v['low']:.2f}–{v['high']:.2f})",
            "accuracy, most confident half": f"{v['confident_half']:.0%}",
            "accuracy on compliant turns": f"{v['accuracy on non-violating turns']:.0%}",
            "violations found": f"{v['violation detection rate']:.0%}",
            "conversations entirely right": f"{v['conversations entirely right']:.0%}",
            f"decided automatically at ≤ {g.get('alpha', 0.1):.0%} error":
                f"{g.get('coverage', 0):.0%} of cases"
                + (f", {g['realised_error']:.0%} wrong" if g.get("auto_decided") else ""),
        })
    return pd.DataFrame(rows)


def show_activation_study(folder: Path | None = None) -> None:
    results = study_results(folder or evaluations_dir(), BUNDLED)
    if not results:
        return
    st.subheader("Verdicts from what the judge knows")
    st.caption("A score read from the judge's hidden states, learned from labelled cases, "
               "against the probability the judge states. Every figure is out of fold: each "
               "case scored by a scorer chosen and fitted without its conversation.")
    for i, (name, data) in enumerate(results):
        n, v, c = data.get("n"), data.get("violations"), data.get("conversations")
        with st.expander(md(f"{name} — {n} labelled cases ({v} violations, {c} conversations)"),
                         expanded=i == 0):
            st.plotly_chart(auroc_figure(data), key=f"ev_act_auroc_{i}", width="stretch")
            if data.get("learning_curve"):
                st.plotly_chart(curve_figure(data), key=f"ev_act_curve_{i}", width="stretch")
            st.dataframe(figures_table(data), hide_index=True, width="stretch")
            if data.get("note"):
                st.caption(md(str(data["note"])))
