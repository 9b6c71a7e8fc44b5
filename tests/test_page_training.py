"""The Training section of the Studies page (the lab): run folders, their last metrics and curves."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from workbench.train.runs import list_runs

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "studies.py")


def _training(at):
    """The Training runs expander (Studies draws the bundled length sweep above it)."""
    return next(e for e in at.expander if e.label == "Training runs")


def _run(root: Path, name: str, kind: str, rows: list[dict]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"kind": kind, "config": {}}))
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"cut')
    return folder


def test_list_runs_reads_last_metrics(tmp_path):
    _run(tmp_path, "g1", "grpo", [{"step": 1, "total_steps": 3, "reward_mean": 0.2, "kl": 0.0},
                                  {"step": 2, "total_steps": 3, "reward_mean": 0.5, "kl": 0.1}])
    (tmp_path / "not-a-run").mkdir()
    runs = list_runs(tmp_path)
    assert [(r["run"], r["kind"], r["steps"], r["total steps"], r["reward (last)"], r["adapter"])
            for r in runs] == [("g1", "grpo", 2, 3, 0.5, False)]
    assert list_runs(tmp_path / "g1")[0]["run"] == "g1"
    assert list_runs(tmp_path / "missing") == []


def test_studies_page_shows_training_runs_without_audit_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'e.db'}")
    runs = tmp_path / "runs"
    _run(runs, "<i>opd", "opd", [{"step": 1, "total_steps": 2, "kl": 0.4, "gated_share": 0.25},
                                     {"step": 2, "total_steps": 2, "kl": 0.3, "gated_share": 0.22}])
    monkeypatch.setenv("WORKBENCH_TRAIN_RUNS", str(runs))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    section = _training(at)
    table = section.dataframe[0].value
    assert list(table["run"]) == ["<i>opd"] and float(table["KL (last)"][0]) == 0.3
    chart = section.get("plotly_chart")[0]
    spec = json.loads(chart.proto.spec)
    assert spec["layout"]["title"]["text"] == "&lt;i&gt;opd"
    assert {t["name"] for t in spec["data"]} == {"kl", "gated_share"}


def test_the_demo_run_shows_its_before_and_after_figures(tmp_path, monkeypatch):
    """The real CPU GRPO run kept in fixtures/training: its curve and the audit coverage of
    the base and the trained keyworder on held-out and training cases."""
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'e.db'}")
    monkeypatch.setenv("WORKBENCH_TRAIN_RUNS", str(ROOT / "fixtures" / "training"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    section = _training(at)
    runs, figures = section.dataframe[0].value, section.dataframe[1].value
    assert list(runs["run"]) == ["grpo-keyworder-complibench"] and int(runs["steps"][0]) == 16
    rows = {(c, m): g for c, m, g in zip(figures["cases"], figures["model"],
                                         figures["gold rules in context"], strict=True)}
    assert rows[("held-out (24)", "before")] == 0.7083 and rows[("held-out (24)", "after")] == 0.8333
    assert rows[("training (16)", "after")] == 1.0
    spec = json.loads(section.get("plotly_chart")[0].proto.spec)
    assert "reward_mean" in {t["name"] for t in spec["data"]}
