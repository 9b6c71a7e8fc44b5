"""``workbench calibrate`` and the saved threshold that ``metrics`` and exports use."""

from __future__ import annotations

import json
import random

import pytest

from store.thresholds import StaleThreshold, current_threshold, save_threshold, threshold_history
from workbench.audit.trace import AuditTrace, Verdict
from workbench.cli import main
from workbench.decision import DecisionSetting
from workbench.identity.roles import COMMAND_LINE, Actor, NotAllowed


def _traces(n: int = 60, seed: int = 5) -> list[AuditTrace]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        truth = i % 2 == 0
        p = min(0.99, max(0.01, rng.gauss(0.62 if truth else 0.38, 0.16)))
        out.append(AuditTrace(
            id=f"c{i}", strategy="cdg", session=f"conv{i // 2}",
            label="negative" if truth else "positive",
            verdict=Verdict(violation=p >= 0.5, reason="r", violated_rules=["R1"] if p >= 0.5 else [],
                            probability=round(p, 4), probability_source="logprobs"),
        ))
    return out


@pytest.fixture
def traces_file(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in _traces()), encoding="utf-8")
    return path


def test_calibrate_reports_cross_validated_figures_and_saves_versions(traces_file, tmp_path, empty_db,
                                                                       capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(traces_file), "--json", str(out), "--save", "dataset:demo"]) == 0
    printed = capsys.readouterr().out
    assert "AUROC (5-fold, grouped by conversation)" in printed
    assert "the judge's verbal probability" in printed
    assert "saved the calibration and decision" in printed and "version 1 of dataset:demo" in printed
    report = json.loads(out.read_text())
    assert report["setting"]["cross_validated"]["folds"] == 5
    assert report["setting"]["fitted_on"]["groups"] == 30
    assert report["reliability_raw"] and report["risk_coverage_out_of_fold"][-1]["coverage"] == 1.0
    version, setting = current_threshold(empty_db, "dataset:demo")
    assert version == 1 and 0 < setting.threshold < 1
    # Saved again on top of the current version: version 2; the first stays in the history.
    assert main(["calibrate", str(traces_file), "--save", "dataset:demo", "--note", "again"]) == 0
    assert [r.version for r in threshold_history(empty_db, "dataset:demo")] == [1, 2]


def test_a_save_on_a_stale_version_is_refused_and_loses_nothing(empty_db):
    s = DecisionSetting(0.4)
    assert save_threshold(empty_db, "policy:p", s, base_version=None, actor=COMMAND_LINE) == 1
    assert save_threshold(empty_db, "policy:p", DecisionSetting(0.3), base_version=1, actor=COMMAND_LINE) == 2
    with pytest.raises(StaleThreshold, match="version 2, not 1"):
        save_threshold(empty_db, "policy:p", DecisionSetting(0.9), base_version=1, actor=COMMAND_LINE)
    assert current_threshold(empty_db, "policy:p")[1].threshold == 0.3
    with pytest.raises(NotAllowed):
        save_threshold(empty_db, "policy:p", s, base_version=2, actor=Actor.signed_in("ann", "annotator"))


def test_metrics_uses_a_saved_or_given_threshold(traces_file, empty_db, capsys):
    save_threshold(empty_db, "dataset:demo", DecisionSetting(0.3), base_version=None, actor=COMMAND_LINE)
    assert main(["metrics", str(traces_file), "--threshold", "dataset:demo", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["threshold"] == 0.3 and row["threshold_source"] == "saved"
    traces = _traces()
    tp = sum(t.verdict.probability >= 0.3 and t.label == "negative" for t in traces)
    fp = sum(t.verdict.probability >= 0.3 and t.label == "positive" for t in traces)
    fn = sum(t.verdict.probability < 0.3 and t.label == "negative" for t in traces)
    assert row["f1_at_threshold"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    # Without one: chosen by grouped cross-validation, said so.
    assert main(["metrics", str(traces_file), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["threshold_source"] == "calibrated out of fold" and row["with_probability"] == 60
    assert main(["metrics", str(traces_file), "--threshold", "dataset:nothing"]) == 2
    assert "no threshold is saved for dataset:nothing" in capsys.readouterr().err


def test_calibrate_refuses_too_few_labelled_probabilities(tmp_path, empty_db, capsys):
    path = tmp_path / "few.jsonl"
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in _traces(6)), encoding="utf-8")
    assert main(["calibrate", str(path)]) == 2
    assert "only 6 labelled verdicts with a probability" in capsys.readouterr().err


def test_parquet_export_writes_the_decision_a_threshold_makes(traces_file, tmp_path, capsys):
    import pyarrow.parquet as pq

    target = tmp_path / "t.parquet"
    assert main(["convert", "traces", str(traces_file), str(target), "--threshold", "0.3"]) == 0
    table = pq.read_table(target, columns=["probability", "threshold", "decided_violation"]).to_pylist()
    assert all(r["threshold"] == 0.3 and r["decided_violation"] == (r["probability"] >= 0.3) for r in table)
