"""``workbench train``: user errors say what is wrong and what to do (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "audit"


def test_data_writes_records(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["train", "data", "--cases", str(FIX / "merchant_cases.jsonl"), "--index",
            str(FIX / "merchant_index.json"), "--out", str(out), "--hf", str(tmp_path / "hf")]
    assert main(args) == 0
    assert "4 records" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 4 and (tmp_path / "hf").is_dir()


def test_user_errors_exit_2(tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    common = ["--cases", str(FIX / "merchant_cases.jsonl"), "--index", str(FIX / "merchant_index.json")]
    assert main(["train", "data", *common[:2], "--index", str(tmp_path / "none.json"),
                 "--out", str(records)]) == 2
    assert "no such index file" in capsys.readouterr().err
    assert main(["train", "data", *common, "--out", str(records), "--strategy", "nope"]) == 2
    assert "unknown strategy" in capsys.readouterr().err
    assert main(["train", "data", *common, "--out", str(records)]) == 0
    capsys.readouterr()
    # Merchant cases name violated rules but no governing rules: coverage has nothing to cover.
    grpo = ["train", "grpo", "--records", str(records), *common, "--student", "x", "--run-dir",
            str(tmp_path / "run")]
    assert main([*grpo, "--reward", "coverage"]) == 2
    assert "no record has gold rules" in capsys.readouterr().err
    assert main([*grpo, "--group", "5"]) == 2
    assert "not a multiple of --group 5" in capsys.readouterr().err
    # Without gold rules the default reward is the second paper's verified one (labels only).
    no_model = ["--student", str(tmp_path / "no"), "--run-dir", str(tmp_path / "run2")]
    main(["train", "grpo", "--records", str(records), *common, *no_model])
    assert "reward: verified (the default; --reward chooses)" in capsys.readouterr().err
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"id": "a", "prompt": None}) + "\n")
    assert main(["train", "opd", "--records", str(bare), "--teacher", "t", "--student", "s",
                 "--run-dir", str(tmp_path / "o")]) == 2
    assert "no record carries a judge prompt" in capsys.readouterr().err
    assert main(["train", "opd", "--records", str(records), "--teacher", "t", "--student", "s",
                 "--run-dir", str(tmp_path / "o"), "--recipe", "cpu", "--clip", "0"]) == 2
    assert "--clip must be positive" in capsys.readouterr().err
    assert main(["train", "opd", "--records", str(records), "--teacher", str(tmp_path / "no"),
                 "--student", str(tmp_path / "no"), "--run-dir", str(tmp_path / "o")]) == 2
    assert "could not load a causal LM" in capsys.readouterr().err


def test_export_and_serve_refuse_what_is_not_an_adapter(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "adapter").mkdir(parents=True)  # a run folder whose adapter was never written
    assert main(["train", "export", str(run), "--out", str(tmp_path / "k.gguf")]) == 2
    err = capsys.readouterr().err
    assert "adapter is not a PEFT adapter folder" in err and "checkpoint" in err
    assert not (tmp_path / "k.gguf").exists()
    assert main(["model", "serve", "--lora", str(tmp_path / "k.gguf")]) == 2
    assert "write it with `workbench train export`" in capsys.readouterr().err


def test_joint_user_errors_exit_2(tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    common = ["--cases", str(FIX / "merchant_cases.jsonl"), "--index", str(FIX / "merchant_index.json")]
    assert main(["train", "data", *common, "--out", str(records)]) == 0
    capsys.readouterr()
    joint = ["train", "joint", "--records", str(records), *common, "--student", "embedded:tiny",
             "--teacher", "embedded", "--run-dir", str(tmp_path / "j")]
    assert main([*joint, "--opd-weight", "-1"]) == 2
    assert "--opd-weight must be 0 or more" in capsys.readouterr().err
    assert main([*joint, "--group", "5"]) == 2
    assert "not a multiple of --group 5" in capsys.readouterr().err
    assert main([*joint, "--top-p", "0"]) == 2
    assert "--top-p in (0, 1]" in capsys.readouterr().err
    # An unknown embedded model is named before any model is loaded.
    assert main(joint) == 2
    assert "unknown embedded model 'tiny'" in capsys.readouterr().err
    unlabelled = tmp_path / "u.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    unlabelled.write_text("".join(json.dumps({**r, "label": None}) + "\n" for r in rows))
    assert main(["train", "joint", "--records", str(unlabelled), *common, "--student", "s",
                 "--teacher", "t", "--run-dir", str(tmp_path / "j2")]) == 2
    assert "no record is labelled" in capsys.readouterr().err
