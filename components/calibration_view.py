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
from workbench.words import BUILTIN_TERM, help_for, setting_words


def _f(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


FIGURE_WIDTH = 360  # px: two figures a row at 1280 px, one at 800
# Titles and axis titles that fit FIGURE_WIDTH (the long ones are in the caption below them).
_SHORT = {
    "rel": ("Reliability", "predicted probability (bin mean)", "share that are violations"),
    "thr": ("Precision, recall, F1", "threshold on the probability", None),
    "rc": ("Risk–coverage", "share decided automatically", "accuracy"),
}


def fitted(fig, name: str):
    """``fig`` with a title and axis titles that fit :data:`FIGURE_WIDTH`, its legend under
    the plot, and margins that grow to hold the tick and axis labels."""
    title, x_title, y_title = _SHORT[name]
    fig.update_layout(title={"text": title, "x": 0, "xanchor": "left"},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top"})
    fig.update_xaxes(title_text=x_title, automargin=True)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title, automargin=True)
    return fig


def show_calibration(report: dict, key: str, saved: tuple[int, float] | None = None,
                     on_save: Callable[[], None] | None = None, save_refusal: str = "",
                     aurocs: dict[str, tuple[float, int]] | None = None) -> None:
    """Headline figures, the three plots, and (when ``on_save``) a save button. ``saved``:
    (version, threshold) of the setting in force; ``save_refusal``: why saving is not allowed;
    ``aurocs``: one AUROC per score of the dataset, named ("the judge's words", "activation
    scorer"; ``workbench.decision.score_aurocs``), shown instead of the report's own."""
    setting = report["setting"]
    cv, about = setting["cross_validated"], setting["fitted_on"]
    st.caption(md(f"{about['cases']} labelled verdicts with a probability ({about['violations']} "
                  f"violations) from {about['groups']} conversations; figures below are "
                  f"{cv['folds']}-fold cross-validated, folds grouped by conversation."))
    # Metrics and figures sit in rows that wrap: five columns cut the metric labels and three
    # columns of figures cut their titles and axis labels at 1280 and 800 px (issue 44).
    tiles = st.container(horizontal=True, wrap=True, gap="small")
    named = aurocs or {"the judge's words": (cv.get("auroc"), about["cases"])}
    for name, (value, n) in named.items():
        tiles.metric(f"AUROC, {name}", _f(value), help=f"{help_for('AUROC')} On {n} labelled "
                     "cases of this dataset.", width="content")
    tiles.metric("Violation-F1, bare verdict", _f(cv.get("bare_f1")), help=help_for("violation-F1"),
                 width="content")
    tiles.metric("Violation-F1 at threshold", _f(cv.get("f1")),
                 help=help_for("violation-F1 at threshold"), width="content")
    tiles.metric("Accuracy, most confident half", _f(cv.get("accuracy_most_confident_half")),
                 help=help_for("accuracy, most confident half"), width="content")
    tiles.metric("Threshold", _f(setting["threshold"]), help=help_for("threshold"), width="content")
    figures = st.container(horizontal=True, wrap=True, gap="medium")
    for name, figure in (("rel", reliability_figure), ("thr", threshold_figure),
                         ("rc", risk_coverage_figure)):
        figures.plotly_chart(fitted(figure(report), name), key=f"{key}_{name}", width=FIGURE_WIDTH)
    st.caption("Reliability: the predicted probability of a violation against the share of "
               "violations observed. Precision, recall and F1 when every case with p ≥ the "
               "threshold is called a violation. Risk–coverage: the accuracy of the most "
               "confident decisions as more cases are decided automatically.")
    if saved is not None:
        # Version 0 is the built-in activation scorer, never "version 0".
        st.caption(md(f"In force: {setting_words(saved[0])}, threshold {saved[1]:.2f}."),
                   help=help_for(BUILTIN_TERM if saved[0] == 0 else "decision setting"))
    else:
        st.caption("No threshold is saved for this dataset yet: verdicts are read at 0.50, uncalibrated.")
    if on_save is not None:
        st.button(f"Save threshold {setting['threshold']:.2f} for this dataset", key=f"{key}_save",
                  disabled=bool(save_refusal), help=save_refusal or None, on_click=on_save)
