"""``workbench scaling fit`` and ``workbench scaling select`` on the simulated fixture."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ROOT / "fixtures/scaling/outcomes.csv"
CASES = ROOT / "fixtures/scaling/cases.jsonl"


def test_fit_json_shape(capsys):
    code = main(["scaling", "fit", str(OUTCOMES), "--json", "--bootstrap", "8", "--maxiter", "40"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"] in {"additive", "nested", "full"}
    assert set(out["models"]) == {"additive", "nested", "full"}
    full = out["models"]["full"]
    assert set(full["params"]) == {
        "gamma_airlines",
        "gamma_retail",
        "eta",
        "beta",
        "rho",
        "alpha",
        "lambda",
    }
    assert set(out["models"]["additive"]["params"]) == {"gamma_airlines", "gamma_retail", "a", "b"}
    assert full["cv_logloss"] > 0 and full["cv_se"] > 0
    lo, hi = full["ci"]["beta"]
    assert lo <= hi and full["bootstrap_replicates"] == 8
    assert full["bootstrap_refit"] == "local"  # the default (same coverage, far cheaper)
    assert "delta_gain_retail_9B" in full["ci"]
    sizes = {r["params_b"] for r in out["loso"]}
    assert sizes == {0.5, 1.0, 2.0, 4.0, 9.0, 27.0}
    assert {"model", "log_loss", "accuracy", "calibration_gap", "ece"} <= set(out["loso"][0])


def test_fit_full_refit_is_an_option(capsys):
    args = ["scaling", "fit", str(OUTCOMES), "--json", "--bootstrap", "4", "--maxiter", "30",
            "--no-loso", "--refit", "full"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {m["bootstrap_refit"] for m in out["models"].values()} == {"full"}


def test_fit_text_report(capsys):
    code = main(["scaling", "fit", str(OUTCOMES), "--bootstrap", "0", "--no-loso", "--maxiter", "30"])
    assert code == 0
    captured = capsys.readouterr()
    assert "Selected by the one-SE rule:" in captured.out
    assert "Leave-one-scale-out: skipped" in captured.out
    assert "cross-validation" in captured.err  # progress goes to stderr


def test_select_writes_training_sets(tmp_path, capsys):
    out_dir = tmp_path / "sets"
    args = ["scaling", "select", str(OUTCOMES), "--teacher", "9", "--student", "4"]
    args += ["--n", "30", "--out", str(out_dir), "--cases", str(CASES), "--model", "nested"]
    assert main(args + ["--maxiter", "40"]) == 0
    uniform = (out_dir / "uniform.jsonl").read_text().splitlines()
    headroom = (out_dir / "headroom.jsonl").read_text().splitlines()
    assert len(uniform) == len(headroom) == 30
    row = json.loads(headroom[0])
    assert row["prompt"].startswith("You are a compliance judge") and "violation" in row
    summary = json.loads((out_dir / "selection.json").read_text())
    assert summary["model"] == "nested" and sum(q["n"] for q in summary["quotas"]) == 30
    assert "mean headroom" in capsys.readouterr().out


def test_select_prints_recovery_when_f1_before_and_after_are_given(tmp_path, capsys):
    args = ["scaling", "select", str(OUTCOMES), "--teacher", "9", "--student", "4", "--n", "30",
            "--out", str(tmp_path / "sets"), "--model", "nested", "--maxiter", "40"]
    recovery = ["--f1-base", "0.50", "--f1-teacher", "0.80", "--f1-uniform", "0.62",
                "--f1-headroom", "0.71"]
    assert main(args + recovery) == 0
    out = capsys.readouterr().out
    # (0.62 - 0.50) / (0.80 - 0.50) = 0.4; (0.71 - 0.50) / 0.30 = 0.7
    assert "recovery (F1 base 0.5, teacher 0.8):" in out
    assert "uniform   F1 0.620  recovery 0.400" in out
    assert "headroom  F1 0.710  recovery 0.700" in out


def test_select_recovery_options_are_checked_before_fitting(tmp_path, capsys):
    args = ["scaling", "select", str(OUTCOMES), "--teacher", "9", "--student", "4", "--n", "30",
            "--out", str(tmp_path / "sets")]
    assert main(args + ["--f1-uniform", "0.6"]) == 2
    assert "--f1-base" in capsys.readouterr().err
    assert main(args + ["--f1-base", "0.5", "--f1-teacher", "0.5", "--f1-headroom", "0.6"]) == 2
    assert "teacher and base both have F1 0.5" in capsys.readouterr().err
    assert main(args + ["--f1-base", "0.5", "--f1-teacher", "0.8", "--f1-headroom", "71"]) == 2
    assert "F1 of headroom must be a number in [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "sets").exists()  # nothing fitted or written


def test_user_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("instance,dataset,session,params_b,complexity,correct\ni,a,s,0,1,1\n")
    assert main(["scaling", "fit", str(bad)]) == 2
    assert "column 'params_b'" in capsys.readouterr().err
    args = ["scaling", "select", str(OUTCOMES), "--teacher", "9", "--student", "4"]
    assert main(args + ["--n", "100000", "--out", str(tmp_path), "--model", "additive"]) == 2
    assert "lower --n" in capsys.readouterr().err
    assert main(["scaling", "fit", str(OUTCOMES), "--bootstrap", "-1"]) == 2
