"""The calibration pictures practitioners know, from a calibration report
(``workbench.decision.calibration_report``, also what ``workbench calibrate --json`` writes): a
reliability diagram, precision/recall/F1 against the threshold, and accuracy against coverage."""

from __future__ import annotations

from typing import Any


def reliability_figure(report: dict[str, Any]):
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                             line={"dash": "dot", "color": "grey"}))
    for key, name in (("reliability_raw", "judge's probability"),
                      ("reliability_calibrated_out_of_fold", "calibrated (out of fold)")):
        rows = report.get(key) or []
        fig.add_trace(go.Scatter(
            x=[r["mean_probability"] for r in rows], y=[r["violation_rate"] for r in rows],
            mode="lines+markers", name=name, text=[f"{r['cases']} cases" for r in rows],
            hovertemplate="predicted %{x:.2f}<br>observed %{y:.2f}<br>%{text}<extra></extra>"))
    fig.update_layout(title="Reliability: predicted against observed violation rate",
                      xaxis_title="predicted probability of violation (bin mean)",
                      yaxis_title="share that are violations", xaxis_range=[0, 1],
                      yaxis_range=[0, 1], legend={"orientation": "h", "y": -0.25})
    return fig


def threshold_figure(report: dict[str, Any]):
    import plotly.graph_objects as go

    rows = report.get("threshold_curve") or []
    fig = go.Figure()
    for key, name in (("precision", "precision"), ("recall", "recall"), ("f1", "violation-F1")):
        fig.add_trace(go.Scatter(x=[r["threshold"] for r in rows], y=[r[key] for r in rows],
                                 mode="lines", name=name, line={"shape": "hv"}))
    t = (report.get("setting") or {}).get("threshold")
    if t is not None:
        fig.add_vline(x=t, line_dash="dash", annotation_text=f"chosen {t:.2f}")
    fig.update_layout(title="Precision, recall and F1 when deciding p ≥ threshold",
                      xaxis_title="threshold on the probability of violation", yaxis_title="",
                      xaxis_range=[0, 1], yaxis_range=[0, 1.02], legend={"orientation": "h", "y": -0.25})
    return fig


def risk_coverage_figure(report: dict[str, Any]):
    import plotly.graph_objects as go

    rows = report.get("risk_coverage_out_of_fold") or []
    fig = go.Figure(go.Scatter(
        x=[r["coverage"] for r in rows], y=[r["accuracy"] for r in rows], mode="lines+markers",
        text=[f"confidence ≥ {r['min_confidence']:.2f}, {r['cases']} cases" for r in rows],
        hovertemplate="decided %{x:.0%}<br>accuracy %{y:.2f}<br>%{text}<extra></extra>",
        name="accuracy of the cases decided"))
    fig.update_layout(title="Risk–coverage: accuracy of the most confident decisions",
                      xaxis_title="share of cases decided automatically (most confident first)",
                      yaxis_title="accuracy", xaxis_range=[0, 1.02], yaxis_range=[0, 1.02],
                      xaxis_tickformat=".0%")
    return fig
