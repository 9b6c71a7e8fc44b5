"""The real OPD runs 1.5B -> 0.5B and Recovery read from their evaluations
(``fixtures/scaling/two_sizes/opd``, issue 31): two training sets of one budget, the students
judged on held-out conversations, Recovery computed by ``scaling recovery`` from the stored
evaluations, which must agree with the verdicts they were scored from."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
TWO = ROOT / "fixtures" / "scaling" / "two_sizes"
OPD = TWO / "opd"
JUDGES = ("base", "teacher", "uniform", "headroom")


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_both_runs_spent_the_same_budget_and_logged_every_step():
    runs = {name: (json.loads((OPD / name / "run.json").read_text(encoding="utf-8"))["config"],
                   _jsonl(OPD / name / "metrics.jsonl")) for name in ("uniform", "headroom")}
    (cu, mu), (ch, mh) = runs["uniform"], runs["headroom"]
    # the same settings but for nothing: a comparison of sets, not of schedules
    assert cu == ch and cu["teacher"] == "embedded" and cu["student"] == "embedded:small"
    assert cu["gate"] == "entropy" and (cu["temperature"], cu["top_p"]) == (0.7, 0.9)
    for config, steps in ((cu, mu), (ch, mh)):
        assert [s["step"] for s in steps] == list(range(1, steps[0]["total_steps"] + 1))
        assert steps[0]["total_steps"] == math.ceil(config["prompts"] / config["global_batch"])
        for s in steps:
            assert 0 < s["gated_share"] <= 1 and s["seconds"] > 0 and math.isfinite(s["loss"])


def test_no_conversation_both_teaches_and_tests():
    taught = {row["session"] for row in _jsonl(OPD / "training_sets.jsonl")}
    tested = {row["session"] for row in _jsonl(OPD / "heldout_cases.jsonl")}
    assert taught and tested and not taught & tested
    sets = _jsonl(OPD / "training_sets.jsonl")
    selection = json.loads((OPD / "selection.json").read_text(encoding="utf-8"))
    for name in ("uniform", "headroom"):
        chosen = [r for r in sets if r["set"] == name]
        assert len(chosen) == selection["n"]
        assert sum(r["headroom"] for r in chosen) / len(chosen) == pytest.approx(
            selection["mean_headroom"][name])


@pytest.mark.parametrize("judge", JUDGES)
def test_each_evaluation_is_its_verdicts_scored_on_the_held_out_cases(judge):
    labels = {c["id"]: c["label"] for c in _jsonl(OPD / "heldout_cases.jsonl")}
    verdicts = _jsonl(OPD / f"verdicts_{judge}.jsonl")
    assert {v["instance"] for v in verdicts} == set(labels)
    [row] = json.loads((OPD / f"eval_{judge}.json").read_text(encoding="utf-8"))
    said = [(v["violation"], labels[v["instance"]] == "negative") for v in verdicts
            if v["violation"] is not None]
    tp = sum(s and g for s, g in said)
    fp = sum(s and not g for s, g in said)
    fn = sum(not s and g for s, g in said)
    assert row["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    tn = sum(not s and not g for s, g in said)
    assert (row["tp"], row["fp"], row["fn"], row["tn"]) == (tp, fp, fn, tn)
    assert row["acc"] == pytest.approx((tp + tn) / len(labels))  # a case without verdict is wrong


def test_the_stored_intervals_are_the_bootstrap_of_the_stored_verdicts():
    import importlib.util

    spec = importlib.util.spec_from_file_location("two_sizes_make", TWO / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    stored = json.loads((OPD / "bootstrap.json").read_text(encoding="utf-8"))
    assert make.opd_bootstrap(OPD, draws=stored["draws"], seed=stored["seed"]) == stored
    recovery = {r["model"]: r["recovery"] for r in
                json.loads((OPD / "recovery.json").read_text(encoding="utf-8"))}
    for model, (lo, hi) in stored["recovery"].items():
        assert lo <= recovery[model] <= hi, model


def test_base_and_teacher_are_the_two_size_runs_on_the_same_cases():
    # the students' "before" and the teacher are not re-run: they are the 156-case verdicts
    shared = {(r["instance"], r["params_b"]): r for r in _jsonl(TWO / "verdicts.jsonl")}
    for judge, size in (("base", 0.5), ("teacher", 1.5)):
        for v in _jsonl(OPD / f"verdicts_{judge}.jsonl"):
            assert v["violation"] == shared[(v["instance"], size)]["violation"], v["instance"]


def test_recovery_is_read_from_the_runs_own_evaluations(capsys):
    args = ["scaling", "recovery", "--json"]
    for judge in JUDGES:
        args += [f"--{judge}-run", str(OPD / f"eval_{judge}.json")]
    assert main(args) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    stored = {r["model"]: r for r in json.loads((OPD / "recovery.json").read_text(encoding="utf-8"))}
    assert rows.keys() == stored.keys()
    for model, row in rows.items():
        # "source" names the file read, which differs between checkouts; the figures must not
        for key in ("f1", "recovery", "labelled", "base_f1", "teacher_f1", "acc", "auroc"):
            assert row[key] == pytest.approx(stored[model][key]), (model, key)
    # What the real runs found: both students flag more than the base (which flagged nothing),
    # so F1 recovers, but the headroom student is less accurate than its own before; the
    # report must say so rather than let Recovery stand alone.
    base = json.loads((OPD / "eval_base.json").read_text(encoding="utf-8"))[0]
    assert base["tp"] + base["fp"] == 0
    assert rows["headroom"]["recovery"] > 0 and rows["headroom"]["acc"] < base["acc"]
    assert "saying 'violation' more often" in rows["headroom"]["caution"]


def test_at_1e_5_four_steps_leave_every_verdict_as_it_was():
    # Why the runs use 1e-4: the uniform set at 1e-5, all else equal, changed no verdict and
    # moved P(violation) by under 0.01 on average, where 1e-4 moved it by about 0.1.
    config = {name: json.loads((OPD / name / "run.json").read_text(encoding="utf-8"))["config"]
              for name in ("uniform", "uniform-lr1e-5")}
    assert config["uniform-lr1e-5"]["learning_rate"] == 1e-5
    assert config["uniform"]["learning_rate"] == 1e-4
    assert {k: v for k, v in config["uniform-lr1e-5"].items() if k != "learning_rate"} == \
        {k: v for k, v in config["uniform"].items() if k != "learning_rate"}
    by = {judge: {v["instance"]: v for v in _jsonl(OPD / f"verdicts_{judge}.jsonl")}
          for judge in ("base", "uniform", "uniform-lr1e-5")}
    assert by["base"].keys() == by["uniform-lr1e-5"].keys() == by["uniform"].keys()
    assert all(by["uniform-lr1e-5"][c]["violation"] == v["violation"] for c, v in by["base"].items())
    assert any(by["uniform"][c]["violation"] != v["violation"] for c, v in by["base"].items())

    def shift(judge):
        return sum(abs(by[judge][c]["probability"] - v["probability"])
                   for c, v in by["base"].items()) / len(by["base"])

    assert shift("uniform-lr1e-5") < 0.01 and shift("uniform") > 5 * shift("uniform-lr1e-5")
