"""Headless tests of the /scaling page with Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

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
    assert "Selected by the one-SE rule" in at.success[0].value
    intervals = at.dataframe[1].value
    assert {"quantity", "estimate", "ci_low", "ci_high"} <= set(intervals.columns)
    assert intervals["ci_low"].notna().all()
    loso = at.dataframe[3].value
    assert set(loso["params_b"]) == {0.5, 1.0, 2.0, 4.0, 9.0, 27.0}
    assert len(at.get("plotly_chart")) == 2  # vs judge size, vs complexity
    # switching the inspected model reruns from the cache, not a new fit
    at.selectbox(key="scaling_model").set_value("full").run()
    assert not at.exception
    assert "lambda" in set(at.dataframe[1].value["quantity"])


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
