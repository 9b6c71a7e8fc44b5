"""GRPO and OPD end to end on a tiny Qwen2-architecture model built here (no download):
a few steps run, an adapter is saved, and an interrupted run resumes where it stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.tiny_models import merchant_student_teacher, one_thread  # noqa: E402
from workbench.train.rewards import coverage_reward, keyword_closure  # noqa: E402
from workbench.train.runs import RunError, checkpoints, read_metrics  # noqa: E402
from workbench.train.trainers import TrainConfig, train_grpo, train_opd  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    with one_thread():
        yield (root, *merchant_student_teacher(root))


def _config(**kw):
    base = dict(epochs=1, global_batch=4, micro_batch=2, learning_rate=1e-3, max_new_tokens=8,
                save_every=1)
    base.update(kw)
    return TrainConfig(**base)


def test_grpo_steps_save_an_adapter_and_resume(setup):
    root, index, cases, records, student, _ = setup
    prompts = [r.keyword_prompt for r in records]
    gold = [["C032", "C050"]] * len(records)
    seen = []

    def reward(i, text):
        seen.append(text)
        return coverage_reward(keyword_closure(cases[i], text, index), gold[i])

    run_dir = root / "grpo"
    cfg = _config(group=2, max_steps=1)  # 2 prompts x 2 candidates per step
    first = train_grpo(student, prompts, reward, run_dir, cfg)
    assert first.steps == 1 and first.resumed_from == 0
    assert (first.adapter / "adapter_config.json").is_file()
    adapter_cfg = json.loads((first.adapter / "adapter_config.json").read_text())
    assert adapter_cfg["r"] == 32
    assert len(seen) == 4
    with pytest.raises(RunError, match="--resume"):
        train_grpo(student, prompts, reward, run_dir, cfg)
    # Resume to the end of the epoch: 4 prompts / 2 per step = 2 steps.
    second = train_grpo(student, prompts, reward, run_dir, _config(group=2), resume=True)
    assert (second.resumed_from, second.steps) == (1, 2)
    assert [m["step"] for m in read_metrics(run_dir)] == [1, 2]
    assert [s for s, _ in checkpoints(run_dir)] == [1, 2]
    row = read_metrics(run_dir)[-1]
    assert 0.0 <= row["zero_advantage_share"] <= 1.0 and row["completion_tokens"] > 0


def test_opd_steps_change_the_adapter_and_resume(setup):
    root, _, _, records, student, teacher = setup
    usable = [r for r in records if r.prompt is not None]
    prompts = [r.prompt for r in usable]
    labels = [r.violation for r in usable]
    run_dir = root / "opd"
    first = train_opd(student, teacher, prompts, run_dir, _config(max_steps=1), labels=labels)
    row = read_metrics(run_dir)[0]
    # Different random teacher: the k1 estimate of KL(student || teacher) is not zero, and the
    # entropy gate supervises about 20 % of the tokens (plus termination), never all of them.
    assert row["kl"] != 0.0
    assert 0.0 < row["gated_share"] < 1.0
    from peft.utils import load_peft_weights

    weights = load_peft_weights(str(first.adapter))
    assert any(float(w.abs().sum()) > 0 for k, w in weights.items() if "lora_B" in k)
    resumed = train_opd(student, teacher, prompts, run_dir, _config(), labels=labels, resume=True)
    assert (resumed.resumed_from, resumed.steps) == (1, 1)  # 4 prompts, global batch 4: 1 step
    uniform = train_opd(student, teacher, prompts, root / "opd-none", _config(max_steps=1, gate="none"))
    assert read_metrics(uniform.run_dir)[0]["gated_share"] == pytest.approx(1.0)


def test_cli_data_grpo_opd_on_complibench_airlines(setup, tmp_path, capsys):
    from workbench.audit.importers.complibench import import_complibench
    from workbench.cli import main

    root, _, _, _, student, teacher = setup
    import_complibench(FIX / "complibench" / "airlines", tmp_path / "cb")
    cases, index = tmp_path / "cb" / "cases.jsonl", tmp_path / "cb" / "index.json"
    records = tmp_path / "records.jsonl"
    assert main(["train", "data", "--cases", str(cases), "--index", str(index),
                 "--out", str(records)]) == 0
    assert "19 records" in capsys.readouterr().out
    small = ["--student", str(student), "--max-steps", "1", "--global-batch", "2",
             "--micro-batch", "2", "--max-new-tokens", "6", "--lr", "1e-3"]
    assert main(["train", "grpo", "--records", str(records), "--cases", str(cases), "--index",
                 str(index), "--group", "2", "--run-dir", str(tmp_path / "g"), *small]) == 0
    err = capsys.readouterr().err
    assert "step 1/1" in err and "reward_mean" in err and "zero_advantage_share" in err
    assert (tmp_path / "g" / "adapter" / "adapter_model.safetensors").is_file()
    assert main(["train", "opd", "--records", str(records), "--teacher", str(teacher),
                 "--run-dir", str(tmp_path / "o"), *small]) == 0
    assert "gated_share" in capsys.readouterr().err


def test_a_resumed_run_ends_where_the_uninterrupted_run_ends(setup):
    from peft.utils import load_peft_weights

    root, index, cases, records, student, _ = setup
    prompts = [r.keyword_prompt for r in records]

    def reward(i, text):
        return coverage_reward(keyword_closure(cases[i], text, index), ["C032"])

    whole = train_grpo(student, prompts, reward, root / "whole", _config(group=2))
    train_grpo(student, prompts, reward, root / "split", _config(group=2, max_steps=1))
    split = train_grpo(student, prompts, reward, root / "split", _config(group=2), resume=True)
    a, b = load_peft_weights(str(whole.adapter)), load_peft_weights(str(split.adapter))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [m["reward_mean"] for m in whole.metrics] == [m["reward_mean"] for m in split.metrics]
