"""Headless tests of the /scaling page with Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages/scaling.py")


def _quick(at: AppTest) -> AppTest:
    at.number_input(key="scaling_bootstrap").set_value(5)
    at.number_input(key="scaling_maxiter").set_value(20)
    return at


def test_demo_analysis_shows_tables_and_figure():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert "Press **Fit models**" in at.info[0].value
    _quick(at).button(key="scaling_run").click().run()
    assert not at.exception
    comparison = at.dataframe[0].value
    assert list(comparison["model"]) == ["additive", "nested", "full"]
    assert comparison["selected"].sum() == 1
    # Plain column names, no raw keys (issue #35: cv_logloss on screen).
    assert {"CV log loss", "CV standard error", "log loss above the best"} <= set(comparison.columns)
    assert "cv_logloss" not in comparison.columns
    assert "Selected by the one-SE rule" in at.success[0].value
    intervals = at.dataframe[1].value
    assert {"quantity", "estimate", "95% interval, low", "95% interval, high"} <= set(intervals.columns)
    assert intervals["95% interval, low"].notna().all()
    # every fitted symbol (a, b, gamma_<dataset>) is explained in plain words beside it
    meanings = dict(zip(intervals["quantity"], intervals["meaning"], strict=True))
    assert all(meanings[q] for q in meanings if q in ("a", "b") or q.startswith("gamma_"))
    loso = at.dataframe[-1].value  # last: after the gains and the recovery tables
    assert set(loso["judge size"]) == {0.5, 1.0, 2.0, 4.0, 9.0, 27.0}  # params_b, in words
    assert len(at.get("plotly_chart")) == 2  # vs judge size, vs complexity
    # switching the inspected model reruns from the cache, not a new fit
    at.selectbox(key="scaling_model").set_value("full").run()
    assert not at.exception
    assert "lambda" in set(at.dataframe[1].value["quantity"])


def test_recovery_from_the_real_runs_or_from_f1_typed_in():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key="scaling_source").set_value("CompliBench airlines, embedded judge (real)").run()
    _quick(at).button(key="scaling_run").click().run()
    assert not at.exception
    # the real distillation's evaluations come first: Recovery without typing a figure
    recovery = at.dataframe[-1].value
    assert list(recovery["Student"]) == ["uniform set", "headroom-selected set"]
    assert list(recovery["Recovery"]) == [0.514, 0.709]
    assert list(recovery["Accuracy"]) == [0.533, 0.433]
    assert list(recovery["Recovery, 95 % interval"]) == ["0.00 to 0.91", "0.33 to 1.53"]
    assert any("saying 'violation' more often" in w.value for w in at.warning)
    at.radio(key="scaling_recovery_source").set_value("Type in F1").run()
    tables = len(at.dataframe)
    at.number_input(key="scaling_f1_base").set_value(0.5).run()
    at.number_input(key="scaling_f1_teacher").set_value(0.8).run()
    assert len(at.dataframe) == tables  # no distilled F1 yet: no table
    at.number_input(key="scaling_f1_headroom").set_value(0.71).run()
    assert not at.exception
    recovery = at.dataframe[-1].value
    # (0.71 - 0.5) / (0.8 - 0.5) = 0.7
    assert list(recovery["Student"]) == ["headroom-selected set"]
    assert recovery["Recovery"].iloc[0] == 0.7
    at.number_input(key="scaling_f1_teacher").set_value(0.5).run()
    assert "both have F1 0.5" in at.warning[-1].value


def test_changed_settings_ask_to_refit():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    _quick(at).button(key="scaling_run").click().run()
    at.number_input(key="scaling_bootstrap").set_value(6).run()
    assert "Press **Fit models**" in at.info[0].value


def test_upload_mode_without_file_explains():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="scaling_source").set_value("Upload a file").run()
    assert not at.exception
    assert "Upload an outcomes table" in at.info[0].value


def _stored_runs(demo_db):
    """Two judges' runs over the demo cases, stored beside the demo SKILLs."""
    import random

    from store import audit_repo
    from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case

    eng, index, cases = demo_db
    aindex, rng = AuditIndex(index), random.Random(5)
    for run, p_right in (("small-judge", 0.55), ("big-judge", 0.85)):
        for case in cases:
            trace = audit_case(case, aindex, "cdg", None, AuditOptions(judge_mode="none"))
            right = rng.random() < p_right
            says_violation = (case.label == "negative") == right
            trace.verdict = Verdict(says_violation, "hand-set", ["x"] if says_violation else [])
            trace.judge_mode = "whole"
            audit_repo.save_trace(eng, trace, run_id=run, dataset="demo", actor=COMMAND_LINE)
    return len(cases)


def test_stored_audit_runs_become_the_outcomes(demo_db):
    n_cases = _stored_runs(demo_db)
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key="scaling_source").set_value("Stored audit runs").run()
    assert not at.exception
    assert at.multiselect(key="scaling_store_runs").value == ["big-judge", "small-judge"]
    at.number_input(key="scaling_store_size_big-judge").set_value(9.0)
    _quick(at).button(key="scaling_run").click().run()
    assert not at.exception, at.exception
    rows = next(m for m in at.metric if m.label == "Rows")
    assert int(rows.value) == 2 * n_cases
    assert next(m for m in at.metric if m.label == "Judge sizes").value == "2"
    assert list(at.dataframe[0].value["model"]) == ["additive", "nested", "full"]


def test_stored_audit_runs_absent_explains(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'empty.db'}")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="scaling_source").set_value("Stored audit runs").run()
    assert not at.exception
    assert "No stored audit runs yet" in at.info[0].value


def test_real_single_judge_outcomes_compare_size_free_models():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key="scaling_source").set_value("CompliBench airlines, embedded judge (real)").run()
    _quick(at).button(key="scaling_run").click().run()
    assert not at.exception
    assert any("one judge size" in i.value for i in at.info)
    assert list(at.dataframe[0].value["model"]) == ["intercept", "complexity"]
    assert len(at.get("plotly_chart")) == 1  # vs complexity only: no size axis to draw
    headings = [h.value for h in at.subheader]
    assert "Complexity effect" in headings and "Leave-one-scale-out" not in headings
    assert next(m for m in at.metric if m.label == "Sessions").value == "82"
