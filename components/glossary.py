"""Tooltips from the glossary: column configs for tables whose headers are metric names."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from workbench.words import ALPHAS, KAPPAS, NOT_APPLICABLE, STAT_NAMES, agreement_text, help_for


def column_help(columns: Iterable[str]) -> dict:
    """``st.dataframe(column_config=...)`` giving every column the glossary knows a help
    tooltip (header text unchanged); unknown columns are left alone."""
    config = {}
    for col in columns:
        meaning = help_for(str(col))
        if meaning:
            config[col] = st.column_config.Column(str(col), help=meaning)
    return config


def plain_stats(rows: list[dict]):
    """A DataFrame of statistic rows with plain column names (``n_items`` → "items", ...),
    κ and α as two decimals with their band in words, agreement as a percentage, and "–"
    where a statistic does not apply (instead of "None")."""
    import pandas as pd

    frame = pd.DataFrame(rows).rename(columns=STAT_NAMES)
    for col in frame.columns:
        if col in KAPPAS or col in ALPHAS:  # "0.17 (slight)": two decimals and the band
            frame[col] = [agreement_text(None if pd.isna(v) else v, col) for v in frame[col]]
        elif col == STAT_NAMES["percent_agreement"]:
            frame[col] = [NOT_APPLICABLE if pd.isna(v) else f"{v:.0%}" for v in frame[col]]
    for col in frame.columns[frame.isna().any()]:  # only those: the rest stay numeric
        frame[col] = frame[col].astype(object).where(frame[col].notna(), NOT_APPLICABLE)
    return frame


def plain_columns(frame, names: dict[str, str]):
    """``frame`` with its raw column keys renamed for the screen (``names``: key -> words)
    and, for ``st.dataframe``, the column configs giving each a glossary tooltip:
    ``(frame, column_config)``."""
    shown = frame.rename(columns=names)
    return shown, column_help(shown.columns)
