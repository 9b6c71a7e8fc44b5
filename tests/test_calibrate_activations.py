"""``workbench calibrate`` learns an activation scorer from labelled traces whose features
were captured, saves it with its calibration, and ``workbench metrics --threshold
dataset:NAME`` applies it to other traces' features without running a model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from store.db import make_engine
from store.thresholds import current_threshold
from workbench.audit.trace import AuditTrace, Verdict
from workbench.cli import main
from workbench.decision import ScoreSource, decide
from workbench.decision import features as ff

LAYERS = (2, 4)


def _run(tmp_path, name: str, n: int, seed: int, verbal_signal: float = 0.0):
    """A traces file and its features: layer 4 carries the answer, the judge's own
    probability barely does (as with the small judge)."""
    rng = np.random.default_rng(seed)
    path = tmp_path / f"{name}.jsonl"
    folder = ff.features_dir(path)
    lines = []
    for i in range(n):
        truth = i % 2 == 0
        p = float(np.clip(0.4 + verbal_signal * truth + 0.1 * rng.normal(), 0.01, 0.99))
        t = AuditTrace(id=f"{name}{i}", strategy="cdg", session=f"{name}conv{i // 2}",
                       label="negative" if truth else "positive",
                       verdict=Verdict(violation=False, reason="r", violated_rules=[],
                                       probability=round(p, 4), probability_source="logprobs"))
        lines.append(json.dumps(t.to_dict()))
        x = rng.normal(0, 1, (len(LAYERS), 12))
        x[1, :3] += 1.6 * truth
        ff.append(folder, ff.new_record(t.id, "cdg", f"sha{i}", "embedded", LAYERS, 100, 1.0), x)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    return make_engine(url)


def test_a_scorer_fitted_on_labelled_traces_scores_other_traces_from_their_features(tmp_path, db, capsys):
    train = _run(tmp_path, "train", 48, seed=1)
    other = _run(tmp_path, "other", 40, seed=2)
    assert main(["calibrate", str(train), "--save", "dataset:cb", "--alpha", "0.2"]) == 0
    printed = capsys.readouterr().out
    assert "the judge's activations" in printed and "scorer chosen inside each fold" in printed
    version, setting = current_threshold(db, "dataset:cb")
    assert setting.scorer["layer"] == 4 and setting.ranks
    assert setting.calibration["a"] > 0  # monotone, never backwards
    assert setting.cross_validated["auroc"] > 0.75 > setting.cross_validated["verbal_auroc"]
    assert setting.auto and setting.auto["alpha"] == 0.2

    assert main(["metrics", str(other), "--threshold", "dataset:cb", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["threshold_source"] == "saved, activation scorer" and row["with_probability"] == 40
    assert row["auroc"] > 0.75  # the saved scorer's AUROC, not the verbal probability's
    # the same decisions come out of decide() with the scorer's outputs
    from workbench.decision.apply import activation_scores

    scores = activation_scores(setting, ff.features_dir(other))
    d = decide(setting, activation=scores["other0"], probability=0.4)
    assert d.source is ScoreSource.ACTIVATIONS


def test_metrics_with_an_activation_setting_and_no_features_says_what_to_do(tmp_path, db, capsys):
    train = _run(tmp_path, "train", 40, seed=3)
    assert main(["calibrate", str(train), "--save", "dataset:cb"]) == 0
    bare = tmp_path / "bare.jsonl"
    bare.write_text(train.read_text(encoding="utf-8"), encoding="utf-8")
    capsys.readouterr()
    assert main(["metrics", str(bare), "--threshold", "dataset:cb"]) == 2
    assert "workbench features capture" in capsys.readouterr().err


def test_score_verbal_keeps_the_judge_probability_even_with_features(tmp_path, db, capsys):
    train = _run(tmp_path, "train", 40, seed=4, verbal_signal=0.2)
    assert main(["calibrate", str(train), "--score", "verbal", "--save", "dataset:v"]) == 0
    _, setting = current_threshold(db, "dataset:v")
    assert setting.scorer is None


def test_the_demo_ships_a_scorer_learned_elsewhere_that_ranks_its_cases(db, capsys):
    """The bundled demo setting (a probe learned on CompliBench airline cases) saved with
    --from-setting and applied by metrics to the demo's captured activations: its AUROC on
    the demo's 21 labels is the one the Start panel states, above the judge's own."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    assert main(["calibrate", "--from-setting", str(demo / "decision_setting.json"),
                 "--save", "dataset:demo"]) == 0
    capsys.readouterr()
    assert main(["metrics", str(demo / "traces_cdg.jsonl"), "--cases", str(demo / "cases.jsonl"),
                 "--threshold", "dataset:demo", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    stated = json.loads((demo / "decision_setting.json").read_text())["setting"]["fitted_on"]
    assert row["with_probability"] == 21 and row["threshold_source"] == "saved, activation scorer"
    assert row["auroc"] == pytest.approx(stated["demo_transfer"]["auroc"], abs=0.005)
    assert row["auroc"] > stated["demo_transfer"]["verbal_auroc"]
    assert main(["calibrate", "--from-setting", str(demo / "cases.jsonl"), "--save", "dataset:x"]) == 2
