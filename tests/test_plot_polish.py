"""Plot polish (issue #35 item 10) and the contexts-only run on Evaluate (item 7): long run
names do not squash the bars (cut, full name in hover), facets do not share crowded tick
labels, log axes read 1, 2, 5, 10, ..., and a run audited without a judge has no ACC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo
from tests.test_page_evaluate import PAGE, db  # noqa: F401  (fixture)
from workbench.audit.trace import AuditTrace, Verdict
from workbench.identity.roles import COMMAND_LINE
from workbench.plot_axes import log_ticks, short_labels, tick_text
from workbench.review.queue import metrics_rows

ROOT = Path(__file__).resolve().parents[1]
LONG = "review-20261202T101010Z-after-the-merchant-policy-edit-of-tuesday"


def test_short_labels_cut_long_names_and_keep_them_apart():
    labels = short_labels([f"cdg · {LONG}", f"cdg · {LONG}-2", "raw"], width=24)
    assert labels == ["cdg · review-20261202T1…", "cdg · review-20261202T1… (2)", "raw"]
    assert all(len(x) <= 28 for x in labels)
    with pytest.raises(ValueError):
        short_labels(["x"], width=3)


@pytest.mark.parametrize("low, high, ticks", [
    (0.5, 27, [0.5, 1, 2, 5, 10, 20, 50]),
    (1.5, 7, [1, 2, 5, 10]),
    (0.4, 72, [0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]),
])
def test_log_ticks_read_in_order(low, high, ticks):
    got = log_ticks(low, high)
    assert got == ticks and got == sorted(got)
    assert [tick_text(t) for t in got[:3]] == [f"{t:g}" for t in ticks[:3]]


def test_the_scaling_figure_uses_those_ticks():
    from workbench.scaling import analyse_scaling, read_outcomes, scaling_figure
    from workbench.scaling.analysis import AnalysisOptions
    from workbench.scaling.fit import FitOptions

    path = ROOT / "fixtures" / "scaling" / "outcomes.csv"
    outcomes = read_outcomes(path.read_text(), "csv")
    report = analyse_scaling(outcomes, AnalysisOptions(bootstrap=0, loso=False,
                                                       fit=FitOptions(maxiter=10)))
    fig = scaling_figure(outcomes, report.fits[report.selected])
    axis = fig.layout.xaxis
    assert axis.type == "log" and list(axis.ticktext) == [tick_text(v) for v in axis.tickvals]
    assert list(axis.tickvals) == sorted(axis.tickvals)


def test_evaluate_bars_are_horizontal_with_cut_names_and_full_names_in_hover(db):  # noqa: F811
    traces = [AuditTrace(id="mor-001-delay-not-yet-late", strategy="cdg", label="negative",
                         judge_mode="whole", verdict=Verdict(True, "", []))]
    audit_repo.save_traces(db, traces, LONG, "demo", actor=COMMAND_LINE)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    quality = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = [t for t in quality["data"] if t.get("type") == "bar"]
    assert bars and all(t.get("orientation") == "h" for t in bars)
    labels = {y for t in bars for y in t["y"]}
    assert max(len(y) for y in labels) <= 32
    assert any(y.startswith("cdg · review-2026") and y.endswith("…") for y in labels)
    hover = {h for t in bars for h in t.get("hovertext") or []}
    assert f"cdg · {LONG}" in hover  # the full name where the label is cut


def test_a_contexts_only_run_has_no_accuracy_not_zero():
    traces = [("ctx", AuditTrace("c1", "cdg", label="negative", judge_mode="none")),
              ("ctx", AuditTrace("c2", "cdg", label="positive", judge_mode="none"))]
    [row] = metrics_rows("demo", traces)
    assert row["judged"] == 0 and row["cases"] == 2
    assert (row["ACC"], row["violation-F1"], row["precision"], row["recall"]) == (None,) * 4
    # A judged run whose judge failed on every case still counts them as wrong.
    failed = [("j", AuditTrace("c1", "cdg", label="negative", judge_mode="whole"))]
    assert metrics_rows("demo", failed)[0]["ACC"] == 0.0
