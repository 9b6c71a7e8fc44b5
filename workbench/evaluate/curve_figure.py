"""Plotly figures of the retrieval evaluations: the recall–tokens curve and the length sweep.

Pure functions from result dicts (the JSON that ``workbench evaluate`` writes) to figures, so
the CLI, the Studies page and notebooks draw the same thing. Labels are escaped: plotly
reads tags in text, and strategy or dataset names come from files.
"""

from __future__ import annotations

import html
from typing import Any

from workbench.settings import evaluations_dir  # noqa: F401  (re-exported for the studies)


def _check(result: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    rows = result.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"not a {what} result: it has no '{key}' list; write one with "
                         f"`workbench evaluate {what}`")
    return rows


def curve_figure(result: dict[str, Any]):
    """Gold coverage against mean context tokens, one line per strategy (markers = budgets)."""
    import plotly.graph_objects as go

    points = _check(result, "points", "retrieval")
    fig = go.Figure()
    for name in dict.fromkeys(str(p["strategy"]) for p in points):
        mine = sorted((p for p in points if p["strategy"] == name), key=lambda p: p["share"])
        fig.add_trace(go.Scatter(
            x=[p["share"] * 100 for p in mine], y=[p["coverage"] for p in mine],
            mode="lines+markers", name=html.escape(name),
            text=[f"{p['mean_tokens']:.0f} context tokens" for p in mine],
            hovertemplate="%{x:.0f}% of RawSkill: coverage %{y:.3f}, %{text}<extra></extra>"))
    raw = result.get("raw_tokens") or 0
    fig.update_layout(
        title=html.escape(f"Gold coverage at matched budgets ({result.get('dataset') or 'cases'};"
                          f" RawSkill ≈ {raw:.0f} tokens)"),
        xaxis_title="context budget (% of RawSkill tokens)", yaxis_title="gold coverage",
        yaxis_range=[0, 1.02], legend_title="strategy")
    return fig


SWEEP_METRICS = {"coverage": "gold coverage", "mean_tokens": "mean context tokens",
                 "acc": "accuracy (ACC)", "f1": "violation-F1"}


def sweep_figure(result: dict[str, Any], metric: str = "coverage"):
    """``metric`` (coverage, mean_tokens, or acc / f1 of a judged sweep) against the real
    SKILL length reached (mean tokens), one line per strategy, as the second paper draws
    accuracy against policy length. Rows without the metric (not judged) are left out."""
    import plotly.graph_objects as go

    if metric not in SWEEP_METRICS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(SWEEP_METRICS)}")
    rows = _check(result, "rows", "length-sweep")
    fig = go.Figure()
    for name in dict.fromkeys(str(r["strategy"]) for r in rows):
        mine = sorted((r for r in rows if r["strategy"] == name and r.get(metric) is not None),
                      key=lambda r: r["length"])
        if not mine:
            continue
        # ACC with its 95 % Wilson interval where the sweep recorded one (error bars).
        bars = None
        if metric == "acc" and all(r.get("acc_low") is not None for r in mine):
            bars = {"type": "data", "symmetric": False,
                    "array": [r["acc_high"] - r["acc"] for r in mine],
                    "arrayminus": [r["acc"] - r["acc_low"] for r in mine]}
        fig.add_trace(go.Scatter(
            x=[r.get("skill_tokens") or r["length"] for r in mine], error_y=bars,
            y=[r[metric] for r in mine], mode="lines+markers", name=html.escape(name),
            text=[f"target {r['length']:,}" for r in mine],
            hovertemplate="SKILL %{x:,.0f} tokens (%{text}): %{y:.3f}<extra></extra>"))
    label = SWEEP_METRICS[metric]
    n = max((r.get("judged_cases") or 0 for r in rows), default=0) if metric in ("acc", "f1") \
        else 0
    title = f"{label} as the SKILL grows" + (f" ({n} judged cases per point)" if n else "")
    fig.update_layout(title=title, xaxis_title="SKILL length (tokens)",
                      yaxis_title=label, legend_title="strategy",
                      yaxis_range=None if metric == "mean_tokens" else [0, 1.02])
    return fig
