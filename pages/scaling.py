"""Scaling: how judge correctness depends on judge size and policy-graph complexity."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components.errors import show_error
from components.glossary import plain_columns
from components.lab.scaling_recovery import recovery_panel
from components.safe import md
from pages._scaling_sources import stored_runs_outcomes
from pages._state import engine
from workbench.inputs import decode_text
from workbench.scaling import (
    AnalysisOptions,
    FitError,
    FitOptions,
    OutcomesError,
    ScalingReport,
    analyse_scaling,
    complexity_figure,
    outcomes_format,
    read_outcomes,
    scaling_figure,
)
from workbench.words import SCALING_NAMES, help_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scaling"
BUNDLED = {
    "Demo outcomes (simulated)": FIXTURES / "outcomes.csv",
    "CompliBench airlines, embedded judge (real)": FIXTURES / "complibench_airlines" / "outcomes.csv",
    "CompliBench airlines, 0.5B and 1.5B judges (real)": FIXTURES / "two_sizes" / "outcomes.csv",
}
STORED, UPLOAD = "Stored audit runs", "Upload a file"
SOURCES = (*BUNDLED, STORED, UPLOAD)


@st.cache_data(show_spinner=False, max_entries=8)
def _analyse(
    data: bytes, name: str, bootstrap: int, maxiter: int, loso: bool, reference: float
) -> tuple[pd.DataFrame, ScalingReport]:
    # InputError (a ValueError) names the line of a non-UTF-8 or binary upload.
    outcomes = read_outcomes(decode_text(data, name)[0], outcomes_format(name))
    options = AnalysisOptions(
        bootstrap=bootstrap, loso=loso, reference_b=reference, fit=FitOptions(maxiter=maxiter)
    )
    return outcomes, analyse_scaling(outcomes, options)


st.title("Scaling")
st.caption(
    "Correctness of each judge on each case, against judge size N and the complexity C of "
    "the case's rule graph. Three models are fitted by maximum likelihood, compared by "
    "session-grouped 5-fold cross-validation (one-standard-error rule) and given "
    "session-bootstrap intervals. With one judge size, the size-free intercept and "
    "complexity models are compared instead."
)

source = st.radio("Outcomes", SOURCES, key="scaling_source", horizontal=True)
data: bytes | None = None
name = "outcomes.csv"
if source in BUNDLED:
    data = BUNDLED[source].read_bytes()
elif source == STORED:
    data, name = stored_runs_outcomes(engine()), "stored-runs.csv"
else:
    upload = st.file_uploader(
        "Outcomes table: instance, dataset, session, params_b, complexity, correct",
        type=["csv", "jsonl", "ndjson"],
        key="scaling_upload",
    )
    if upload is not None:
        data, name = upload.getvalue(), upload.name

c1, c2, c3, c4 = st.columns(4)
bootstrap = c1.number_input(
    "Bootstrap replicates",
    0,
    5000,
    1000,
    step=100,
    key="scaling_bootstrap",
    help="Session-clustered bootstrap; 0 skips the intervals.",
)
maxiter = c2.number_input(
    "Search generations",
    10,
    2000,
    300,
    step=50,
    key="scaling_maxiter",
    help="Differential-evolution generations per fit; fewer is faster.",
)
reference = c3.number_input(
    "Reference size (B)",
    0.1,
    1000.0,
    2.0,
    key="scaling_reference",
    help="Gains are P(size) minus P(reference size).",
)
loso = c4.checkbox("Leave-one-scale-out", True, key="scaling_loso")

if data is None:
    if source == UPLOAD:
        st.info("Upload an outcomes table (.csv or .jsonl) or use the demo outcomes.")
    st.stop()

args = (data, name, int(bootstrap), int(maxiter), bool(loso), float(reference))
if st.button("Fit models", type="primary", key="scaling_run"):
    st.session_state["scaling_args"] = args
if st.session_state.get("scaling_args") != args:
    st.info("Press **Fit models** to run the analysis on these outcomes and settings.")
    st.stop()

try:
    with st.spinner("Fitting, cross-validating and bootstrapping…"):
        outcomes, report = _analyse(*args)
except (OutcomesError, FitError, ValueError) as exc:
    show_error(exc, "The outcomes could not be analysed. Fix the table and upload it again:",
               block=True)
    st.stop()

m1, m2, m3, m4 = st.columns(4)
m1.metric("Rows", len(outcomes))
m2.metric("Instances", outcomes[["dataset", "instance"]].drop_duplicates().shape[0])
m3.metric("Sessions", outcomes[["dataset", "session"]].drop_duplicates().shape[0])
m4.metric("Judge sizes", outcomes["params_b"].nunique())

st.subheader("Model comparison")
for note in report.notes:
    st.info(note)
comparison, config = plain_columns(report.comparison_table(), SCALING_NAMES)
st.dataframe(comparison, hide_index=True, width="stretch", column_config=config)
st.success(f"Selected by the one-SE rule: **{report.selected}**")

models = list(report.fits)
chosen = st.selectbox("Inspect model", models, index=models.index(report.selected), key="scaling_model")
fit = report.fits[chosen]
if fit.at_bounds:
    st.warning(
        "Estimates on the edge of the search box (weakly identified): "
        + ", ".join(md(p) for p in fit.at_bounds)
    )

if not report.single_size:
    st.subheader("Fitted correctness vs judge size")
    st.plotly_chart(scaling_figure(outcomes, fit), key="scaling_figure")
st.subheader("Fitted correctness vs complexity")
st.plotly_chart(complexity_figure(outcomes, fit), key="scaling_complexity_figure")

st.subheader("Estimates and 95% intervals")
if not report.bootstrap:
    st.caption("Bootstrap skipped (0 replicates): no intervals.")
else:
    boot = report.bootstrap[chosen]
    st.caption(f"{boot.draws.shape[0]} session-bootstrap replicates ({boot.failed} failed).")
intervals = report.intervals_table(chosen)
# Plain meaning beside each fitted quantity (a, b, gamma_<dataset>, ...): the names are the
# model's symbols, which an analyst cannot read without the paper.
intervals = intervals.assign(meaning=intervals["quantity"].map(lambda q: help_for(str(q)) or ""))
st.dataframe(intervals.rename(columns=SCALING_NAMES), hide_index=True, width="stretch",
             column_config={SCALING_NAMES["ci_low"]: st.column_config.NumberColumn(
                                help="Lower end of the session-bootstrap interval"),
                            SCALING_NAMES["ci_high"]: st.column_config.NumberColumn(
                                help="Upper end of the session-bootstrap interval")})

gains = report.gains(chosen)
if report.single_size:
    st.subheader("Complexity effect")
    st.caption("P(correct) at the 10th and 90th complexity percentile, and their difference.")
    columns = ["dataset", "params_b", "c_q10", "c_q90", "p_q10", "p_q90", "complexity_effect"]
    shown, config = plain_columns(gains[columns], SCALING_NAMES)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config)
else:
    st.subheader(f"Gains over the {report.grid.reference:g}B judge")
    shown, config = plain_columns(gains, SCALING_NAMES)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config)

recovery_panel()

if report.single_size:
    st.stop()  # leave-one-scale-out needs three judge sizes; one has nothing to leave out

st.subheader("Leave-one-scale-out")
if report.loso:
    shown, config = plain_columns(pd.DataFrame(report.loso), SCALING_NAMES)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config)
else:
    st.caption("Skipped, or fewer than three judge sizes.")
