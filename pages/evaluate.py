"""Evaluate: metrics of stored audit runs side by side (ACC, violation-F1, tokens, latency per
strategy and dataset), as a table, plotly charts and a CSV export."""

from __future__ import annotations

import html

import pandas as pd
import plotly.express as px
import streamlit as st

from components.activation_study import show_activation_study
from components.case_table import case_rows, show_case_table
from components.glossary import column_help
from components.safe import md
from pages import _audit_cache as audit_cache
from pages._evaluate_calibration import calibration_section
from pages._state import engine
from store import audit_repo
from workbench import words
from workbench.export.sheets import frame_csv
from workbench.plot_axes import short_labels
from workbench.review.queue import METRIC_COLUMNS, gold_of, metrics_rows
from workbench.words import help_for

COMPARE = {"each run": "run", "newest trace per case and strategy": "latest"}

st.title("Evaluate")
st.caption("ACC and violation-F1 are those of the labels every page shows (the dataset's "
           "saved setting decides them). ACC counts a case without a verdict, or to review, as "
           "wrong; violation-F1 measures how well violations are found, on decided cases only. "
           "Gold labels and governing rules come from the stored cases. Hover a column header "
           "for what it means, or see the Glossary.")
eng = engine()
datasets = audit_repo.trace_datasets(eng)
if not datasets:
    st.info("No stored audit runs yet. Audit a dataset on the Review page, or "
            "`workbench audit --store DATASET ...`.")
    st.stop()

cols = st.columns([2, 2])
chosen = cols[0].multiselect("Datasets", datasets, default=datasets, key="ev_datasets")
compare = cols[1].radio("Compare", list(COMPARE), horizontal=True, key="ev_compare",
                        help="each run separately, or every run's newest trace per case")
rows: list[dict] = []
case_list: list[dict] = []  # the per-case list below, from the same cases and traces
deciders: dict[str, str] = {}  # dataset -> which setting decided its labels, in words
for dataset in chosen:
    labels, gold_rules = gold_of(audit_repo.load_cases(eng, dataset))
    # The decided records every page shows: the headline and the per-case list read them.
    verdicts = audit_cache.verdicts(eng, dataset)
    deciders[dataset] = words.decided_by(v.setting_version for v in verdicts.values()
                                         if v.decided is not None)
    rows += metrics_rows(dataset, audit_cache.records(eng, dataset), labels or None,
                         gold_rules or None, by=COMPARE[compare], verdicts=verdicts)
    case_list += case_rows(dataset, audit_cache.records(eng, dataset), labels, verdicts)
table = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
if table.empty:
    st.info("Choose at least one dataset.")
    st.stop()
all_runs = sorted(table["run"].unique())
if compare == "each run" and len(all_runs) > 1:
    runs = st.multiselect("Runs", all_runs, key="ev_runs", placeholder="all runs")
    if runs:
        table = table[table["run"].isin(runs)]

# Shown in words (issue 44): shares to three decimals, token means whole, latency as a
# duration ("3 min 9 s", not "189362.5"), "–" where undefined (not "None"). The CSV keeps
# the numbers.
shown = table.rename(columns={"latency ms": "latency"})
shown["latency"] = table["latency ms"].map(words.duration_ms)
number_formats: dict[str, str] = {}
for c, decimals in [*[(c, 3) for c in ("ACC", "violation-F1", "precision", "recall", "gold in context")],
                    ("context tokens", 0), ("online tokens", 0)]:
    values = pd.to_numeric(shown[c], errors="coerce").round(decimals)
    if values.notna().all():  # numbers stay numbers (they sort as numbers)
        shown[c], number_formats[c] = values, f"%.{decimals}f"
    else:
        shown[c] = values.map(lambda v, d=decimals: words.number(v, d))
st.dataframe(shown, hide_index=True, width="stretch",
             column_config=column_help(shown.columns)
             | {c: st.column_config.NumberColumn(format=f, help=help_for(c))
                for c, f in number_formats.items()}
             | {"latency": st.column_config.TextColumn(help=help_for("latency ms"))})
st.caption(md("Decided by " + "; ".join(f"{d}: {by}" for d, by in deciders.items()) + "."),
           help=f"{help_for('decision setting')} {help_for(words.BUILTIN_TERM)}")
st.download_button("Download CSV", frame_csv(table).encode("utf-8"),
                   file_name="evaluation.csv", mime="text/csv", key="ev_csv")

# One bar per (strategy, run) in each dataset; run names only when runs are compared.
# Plotly reads tags in labels (<a>, <b>, ...): escaped names show as the text they are.
series = (table["strategy"] if compare != "each run" or table["run"].nunique() < 2
          else table["strategy"] + " · " + table["run"])
names = list(dict.fromkeys(series))
# Long run names cut to fit beside the bars (the full name in the hover), one label each.
label_of = dict(zip(names, short_labels(names, width=32), strict=True))
plot = table.assign(series=series.map(html.escape),
                    label=series.map(label_of).map(html.escape),
                    dataset=table["dataset"].map(html.escape))


def bars(metrics: list[str], title: str, key: str, share: bool = False) -> None:
    """Horizontal bars, one facet per metric: the series' names are read once, on the left,
    whatever their length, and each facet's value axis has room for its few ticks."""
    long = plot.melt(id_vars=["dataset", "series", "label"], value_vars=metrics, var_name="metric")
    long = long.dropna(subset=["value"])
    if long.empty:
        st.caption(f"{title}: nothing to plot (undefined for these runs).")
        return
    rows = long["label"].nunique() * max(1, long["dataset"].nunique())
    fig = px.bar(long, y="label", x="value", color="dataset", barmode="group", orientation="h",
                 facet_col="metric", title=title, labels={"label": "", "value": ""},
                 hover_name="series", hover_data={"label": False, "metric": True, "value": ":.3f"},
                 category_orders={"label": [html.escape(label_of[n]) for n in names]},
                 height=160 + 26 * rows, facet_col_spacing=0.08)
    # Shares get three ticks (0 %, 50 %, 100 %): with more, "100%" of one facet ran into
    # "0%" of the next ("100%0%"). The legend goes under the plot, and away with one dataset.
    fig.update_xaxes(matches=None, showticklabels=True, nticks=4, tickformat="~s" if not share
                     else ".0%", range=[0, 1] if share else None)
    if share:
        fig.update_xaxes(tickvals=[0, 0.5, 1])
    fig.update_layout(showlegend=long["dataset"].nunique() > 1,
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0})
    fig.update_yaxes(autorange="reversed")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    st.plotly_chart(fig, key=key, width="stretch")


bars(["ACC", "violation-F1"], "Quality", "ev_quality", share=True)
bars(["context tokens", "online tokens"], "Tokens per case (mean)", "ev_tokens")
bars(["latency ms"], "Latency per case (mean, ms)", "ev_latency")

with st.container(border=True):
    calibration_section(eng, chosen, audit_cache.versions)
with st.container(border=True):
    show_activation_study()  # the bundled study and any in the evaluations folder

# -- per case ------------------------------------------------------------------------------
st.subheader("Per-case results")
st.caption("Every stored trace of the chosen datasets; open one on Replay to see its evidence.")
show_case_table(case_list, key="ev_cases")
