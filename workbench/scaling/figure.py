"""Plotly figure: fitted correctness against judge size at low and high complexity.

One panel per dataset. Lines are the fitted P at the dataset's 10th and 90th complexity
percentiles; markers are the observed correctness of the instances in the matching
complexity bins (bottom and top fifth, whose centres are those percentiles), with 95%
Wilson intervals.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.plot_axes import log_ticks, tick_text
from workbench.scaling.fit import ScalingFit

_LOW_COLOUR, _HIGH_COLOUR = "#1f77b4", "#d62728"


def wilson_interval(k: np.ndarray, n: np.ndarray, z: float = 1.96) -> tuple[np.ndarray, ...]:
    """95% Wilson score interval of a binomial proportion k/n (element-wise)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return centre - half, centre + half


def _with_rates(grouped: pd.DataFrame) -> pd.DataFrame:
    """``grouped`` (columns ``correct`` and ``n``) with the observed rate and its 95% Wilson
    interval."""
    lo, hi = wilson_interval(grouped["correct"], grouped["n"])
    return grouped.assign(rate=grouped["correct"] / grouped["n"], ci_low=lo, ci_high=hi)


def _panels(outcomes: pd.DataFrame, fit: ScalingFit) -> tuple[go.Figure, list[str], list[str]]:
    """One panel per dataset the fit knows: the figure, the datasets and their escaped titles."""
    datasets = [d for d in sorted(outcomes["dataset"].unique()) if d in fit.datasets]
    # Plotly renders a subset of HTML in titles and hover text: escape user-supplied names.
    titles = [html.escape(str(d)) for d in datasets]
    fig = make_subplots(rows=1, cols=max(len(datasets), 1), shared_yaxes=True, subplot_titles=titles)
    return fig, datasets, titles


def _observed_trace(x, obs: pd.DataFrame, marker: dict, **trace) -> go.Scatter:
    """Observed rates as markers with asymmetric Wilson error bars; ``n`` in the hover data."""
    return go.Scatter(
        x=x,
        y=obs["rate"],
        mode="markers",
        marker=marker,
        error_y={
            "type": "data",
            "symmetric": False,
            "array": obs["ci_high"] - obs["rate"],
            "arrayminus": obs["rate"] - obs["ci_low"],
        },
        customdata=obs["n"],
        **trace,
    )


def _fitted_trace(x, y, line: dict, **trace) -> go.Scatter:
    return go.Scatter(x=x, y=y, mode="lines", line=line, **trace)


def _add_series(fig: go.Figure, col: int, group: str, fitted: go.Scatter, observed: go.Scatter) -> None:
    """A fitted line and its observed markers into panel ``col`` as one legend group, listed
    in the legend once (from the first panel)."""
    for trace in (fitted, observed):
        trace.update(legendgroup=group, showlegend=col == 1)
        fig.add_trace(trace, row=1, col=col)


def _finish(fig: go.Figure, title: str) -> go.Figure:
    fig.update_yaxes(title_text="P(correct)", range=[0, 1], row=1, col=1)
    fig.update_layout(title=title, legend={"orientation": "h", "y": -0.25}, margin={"t": 70})
    return fig


def observed_bins(
    outcomes: pd.DataFrame, dataset: str, low_q: float = 0.1, high_q: float = 0.9
) -> pd.DataFrame:
    """Observed correctness per judge size in the low and high complexity bins of a dataset.

    The low bin holds instances with C <= Q(2*low_q), the high bin C >= Q(1 - 2*(1-high_q)),
    so each bin is centred on the percentile its fitted line is drawn at.
    """
    rows = outcomes[outcomes["dataset"] == dataset]
    instances = rows.drop_duplicates("instance")["complexity"]
    low_cut = float(np.quantile(instances, min(2 * low_q, 0.5)))
    high_cut = float(np.quantile(instances, max(1 - 2 * (1 - high_q), 0.5)))
    parts = []
    for name, mask in (
        ("low", rows["complexity"] <= low_cut),
        ("high", rows["complexity"] >= high_cut),
    ):
        grouped = rows[mask].groupby("params_b")["correct"].agg(correct="sum", n="count").reset_index()
        parts.append(_with_rates(grouped).assign(bin=name))
    return pd.concat(parts, ignore_index=True)


def scaling_figure(
    outcomes: pd.DataFrame, fit: ScalingFit, *, low_q: float = 0.1, high_q: float = 0.9
) -> go.Figure:
    """Fitted P(correct) vs judge size (log axis) per dataset, observed binned rates overlaid."""
    fig, datasets, titles = _panels(outcomes, fit)
    sizes = np.sort(outcomes["params_b"].unique())
    grid = np.geomspace(sizes[0] / 1.25, sizes[-1] * 1.25, 80)
    for col, dataset in enumerate(datasets, start=1):
        instances = outcomes[outcomes["dataset"] == dataset].drop_duplicates("instance")
        bins = observed_bins(outcomes, dataset, low_q, high_q)
        for name, q, colour in (("low", low_q, _LOW_COLOUR), ("high", high_q, _HIGH_COLOUR)):
            c = float(np.quantile(instances["complexity"], q))
            label = f"C at {q:.0%} percentile"
            obs = bins[bins["bin"] == name]
            _add_series(
                fig, col, name,
                _fitted_trace(
                    grid, fit.predict(dataset, grid, c),
                    {"color": colour, "dash": "solid" if name == "low" else "dash"},
                    name=f"fitted, {label}",
                    hovertemplate=f"{titles[col - 1]}<br>C={c:g}<br>%{{x:.3g}}B: P=%{{y:.3f}}<extra></extra>",
                ),
                _observed_trace(
                    obs["params_b"],
                    obs,
                    {"color": colour, "size": 8, "symbol": "circle" if name == "low" else "square"},
                    name=f"observed, {name}-complexity bin",
                    hovertemplate="%{x:.3g}B: %{y:.3f} observed (n=%{customdata})<extra></extra>",
                ),
            )
        # Ticks 1, 2, 5, 10, ...: plotly's own log ticks read "5, 1, 2, 5, 10, 2" on a
        # short range (its minor digits), which nobody reads as sizes.
        ticks = log_ticks(float(grid[0]), float(grid[-1]))
        fig.update_xaxes(type="log", title_text="judge size (B parameters)", tickvals=ticks,
                         ticktext=[tick_text(t) for t in ticks], row=1, col=col)
    return _finish(fig, f"Correctness vs judge size ({html.escape(fit.model)} model)")


def complexity_bins(outcomes: pd.DataFrame, dataset: str, bins: int = 5) -> pd.DataFrame:
    """Observed correctness per judge size in complexity bins of a dataset.

    Bin edges are quantiles of the dataset's instances (each instance once), so each bin holds
    about the same number of instances; tied complexities can merge bins. Columns: params_b,
    bin, c_mid (median C of the bin's rows), correct, n, rate, ci_low, ci_high.
    """
    rows = outcomes[outcomes["dataset"] == dataset]
    instances = rows.drop_duplicates("instance")["complexity"].to_numpy(float)
    edges = np.unique(np.quantile(instances, np.linspace(0, 1, bins + 1)))
    # right-closed last bin: the maximum belongs to the top bin, not one past it
    which = np.searchsorted(edges, rows["complexity"].to_numpy(float), side="right") - 1
    which = np.clip(which, 0, max(len(edges) - 2, 0))
    grouped = (
        rows.assign(bin=which)
        .groupby(["params_b", "bin"])
        .agg(c_mid=("complexity", "median"), correct=("correct", "sum"), n=("correct", "count"))
        .reset_index()
    )
    return _with_rates(grouped)


def complexity_figure(outcomes: pd.DataFrame, fit: ScalingFit, *, bins: int = 5) -> go.Figure:
    """Fitted P(correct) against complexity C per dataset and judge size, with observed rates in
    complexity bins (95% Wilson intervals). The one figure that works with a single judge."""
    fig, datasets, titles = _panels(outcomes, fit)
    sizes = np.sort(outcomes["params_b"].unique())
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
    for col, dataset in enumerate(datasets, start=1):
        rows = outcomes[outcomes["dataset"] == dataset]
        grid = np.linspace(float(rows["complexity"].min()), float(rows["complexity"].max()), 80)
        observed = complexity_bins(outcomes, dataset, bins)
        for i, size in enumerate(sizes):
            colour = palette[i % len(palette)]
            label = f"{size:g}B"
            obs = observed[observed["params_b"] == size]
            _add_series(
                fig, col, label,
                _fitted_trace(
                    grid, fit.predict(dataset, size, grid), {"color": colour},
                    name=f"fitted, {label}",
                    hovertemplate=f"{titles[col - 1]} {label}<br>C=%{{x:.3g}}: P=%{{y:.3f}}<extra></extra>",
                ),
                _observed_trace(
                    obs["c_mid"],
                    obs,
                    {"color": colour, "size": 8},
                    name=f"observed, {label}",
                    hovertemplate="C≈%{x:.3g}: %{y:.3f} observed (n=%{customdata})<extra></extra>",
                ),
            )
        fig.update_xaxes(title_text="complexity C of the case's rule graph", row=1, col=col)
    return _finish(fig, f"Correctness vs policy complexity ({html.escape(fit.model)} model)")
