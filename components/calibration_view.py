"""The Evaluate page's verdict calibration: the figures and figures' numbers of a calibration
report (``workbench.audit.calibration_figures``), and the button that saves its threshold."""

from __future__ import annotations

import math
from collections.abc import Callable

import streamlit as st

from components.safe import md
from workbench.audit.calibration_figures import (
    reliability_figure,
    risk_coverage_figure,
    threshold_figure,
)
from workbench.glossary import help_for


def _f(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def show_calibration(report: dict, key: str, saved: tuple[int, float] | None = None,
                     on_save: Callable[[], None] | None = None, save_refusal: str = "") -> None:
    """Headline figures, the three plots, and (when ``on_save``) a save button. ``saved``:
    (version, threshold) of the setting in force; ``save_refusal``: why saving is not allowed."""
    setting = report["setting"]
    cv, about = setting["cross_validated"], setting["fitted_on"]
    st.caption(md(f"{about['cases']} labelled verdicts with a probability ({about['violations']} "
                  f"violations) from {about['groups']} conversations; figures below are "
                  f"{cv['folds']}-fold cross-validated, folds grouped by conversation."))
    cols = st.columns(5)
    cols[0].metric("AUROC", _f(cv.get("auroc")), help=help_for("AUROC"))
    cols[1].metric("Violation-F1, bare verdict", _f(cv.get("bare_f1")), help=help_for("violation-F1"))
    cols[2].metric("Violation-F1 at threshold", _f(cv.get("f1")), help=help_for("violation-F1 at threshold"))
    cols[3].metric("Accuracy, most confident half", _f(cv.get("accuracy_most_confident_half")),
                   help=help_for("accuracy, most confident half"))
    cols[4].metric("Threshold", _f(setting["threshold"]), help=help_for("threshold"))
    left, mid, right = st.columns(3)
    left.plotly_chart(reliability_figure(report), key=f"{key}_rel", width="stretch")
    mid.plotly_chart(threshold_figure(report), key=f"{key}_thr", width="stretch")
    right.plotly_chart(risk_coverage_figure(report), key=f"{key}_rc", width="stretch")
    if saved is not None:
        st.caption(md(f"In force: threshold {saved[1]:.2f} (version {saved[0]})."))
    else:
        st.caption("No threshold is saved for this dataset yet: verdicts are read at 0.50, uncalibrated.")
    if on_save is not None:
        st.button(f"Save threshold {setting['threshold']:.2f} for this dataset", key=f"{key}_save",
                  disabled=bool(save_refusal), help=save_refusal or None, on_click=on_save)
