"""Metrics side by side in a row that wraps where the window is narrow, so no label or value
is ever cut ("No-rejectio…", "Complexity C (a…" in fixed columns at 800 px; issue 56)."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

Metric = tuple[str, object] | tuple[str, object, str | None]


def metric_row(metrics: Iterable[Metric], key: str | None = None) -> None:
    """``(label, value)`` or ``(label, value, help)`` each, drawn at their text's width and
    wrapped onto more rows when the row is full."""
    row = st.container(horizontal=True, wrap=True, gap="medium", key=key)
    for label, value, *more in metrics:
        row.metric(label, value, help=more[0] if more else None, width="content")
