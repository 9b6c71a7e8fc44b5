"""Recovery (first paper, Eq. 6) read from the runs' own evaluations: traces files and metrics JSON.

Four judges on the same 8 labelled held-out cases (4 violations): their verdicts are chosen so
that each F1 is known by hand, and Recovery follows from those, not from typed-in values.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from workbench.audit.trace import AuditTrace, Verdict
from workbench.audit.trace_file import encode_trace
from workbench.cli import main
from workbench.scaling.recovery_runs import (
    RunEvaluationError,
    recovery_from_runs,
    run_f1,
    run_f1_text,
    typed_f1,
)

# True = violation. Labels: "negative" is a violation in the workbench's vocabulary.
GOLD = [True, True, True, True, False, False, False, False]
VERDICTS = {
    # TP FP FN -> F1 = 2TP / (2TP + FP + FN)
    "base": [True, False, False, False, True, False, False, False],      # 1 1 3 -> 2/6 = 0.333
    "teacher": [True, True, True, True, False, False, False, False],     # 4 0 0 -> 1.0
    "uniform": [True, True, False, False, True, False, False, False],    # 2 1 2 -> 4/7 = 0.571
    "headroom": [True, True, True, False, False, False, False, False],   # 3 0 1 -> 6/7 = 0.857
}
F1 = {"base": 1 / 3, "teacher": 1.0, "uniform": 4 / 7, "headroom": 6 / 7}


def _traces(path, verdicts, ids=None, strategy="cdg"):
    ids = ids or [f"case-{i}" for i in range(len(verdicts))]
    lines = []
    for cid, gold, said in zip(ids, GOLD, verdicts, strict=True):
        verdict = None if said is None else Verdict(violation=said, reason="r", violated_rules=[])
        trace = AuditTrace(id=cid, strategy=strategy, label="negative" if gold else "positive",
                           verdict=verdict)
        lines.append(encode_trace(trace))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def runs(tmp_path):
    return {name: _traces(tmp_path / f"{name}.jsonl", v) for name, v in VERDICTS.items()}


def test_f1_is_computed_from_a_traces_file_as_audit_metrics_does(runs):
    for name, path in runs.items():
        got = run_f1(path, name)
        assert got.f1 == pytest.approx(F1[name]) and got.labelled == 8 and got.group == "cdg"
        assert got.cases == frozenset(f"case-{i}" for i in range(8))


def test_recovery_command_reads_every_judge_from_its_evaluation(runs, capsys):
    args = ["scaling", "recovery", "--json"] + [a for n, p in runs.items() for a in (f"--{n}-run", str(p))]
    assert main(args) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    gap = F1["teacher"] - F1["base"]
    assert rows["uniform"]["recovery"] == pytest.approx((F1["uniform"] - F1["base"]) / gap)  # 0.357
    assert rows["headroom"]["recovery"] == pytest.approx((F1["headroom"] - F1["base"]) / gap)  # 0.786
    assert rows["headroom"]["source"] == str(runs["headroom"]) and rows["headroom"]["labelled"] == 8
    assert rows["uniform"]["base_f1"] == pytest.approx(1 / 3)


def test_a_metrics_json_of_audit_metrics_serves_as_well(runs, tmp_path, capsys):
    # The real `workbench metrics --json` output of the headroom run.
    assert main(["metrics", str(runs["headroom"]), "--json"]) == 0
    metrics = tmp_path / "headroom-metrics.json"
    metrics.write_text(capsys.readouterr().out, encoding="utf-8")
    got = run_f1(metrics, "headroom")
    assert got.f1 == pytest.approx(6 / 7) and got.labelled == 8 and got.cases is None
    rows = recovery_from_runs(run_f1(runs["base"], "base"), run_f1(runs["teacher"], "teacher"),
                              [got])
    assert rows[0]["recovery"] == pytest.approx((6 / 7 - 1 / 3) / (2 / 3))


def test_typed_in_figures_stay_for_outside_judges(runs, capsys):
    # A teacher evaluated elsewhere (say, a paper's figure): typed in, the rest from runs.
    args = ["scaling", "recovery", "--base-run", str(runs["base"]), "--f1-teacher", "0.9",
            "--headroom-run", str(runs["headroom"])]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"headroom  F1 0.857  recovery {(6 / 7 - 1 / 3) / (0.9 - 1 / 3):.3f}" in out
    assert "(8 cases," in out


def test_runs_that_scored_different_cases_are_refused(runs, tmp_path, capsys):
    other = _traces(tmp_path / "other.jsonl", VERDICTS["uniform"],
                    ids=[f"case-{i}" for i in range(1, 9)])
    with pytest.raises(RunEvaluationError, match="base and uniform runs scored different cases"):
        recovery_from_runs(run_f1(runs["base"], "base"), run_f1(runs["teacher"], "teacher"),
                           [run_f1(other, "uniform")])
    args = ["scaling", "recovery", "--base-run", str(runs["base"]), "--teacher-run", str(runs["teacher"]),
            "--uniform-run", str(other)]
    assert main(args) == 2
    assert "same held-out cases" in capsys.readouterr().err


def test_held_out_cases_without_a_violation_give_no_f1_and_are_refused(tmp_path):
    # No violation to find and none flagged: 2TP + FP + FN = 0, F1 has no value.
    silent = _traces(tmp_path / "silent.jsonl", [False] * 8)
    all_compliant = {f"case-{i}": "positive" for i in range(8)}
    with pytest.raises(RunEvaluationError, match="F1 is undefined"):
        run_f1(silent, "base", labels=all_compliant)
    assert run_f1(silent, "base").f1 == 0.0  # with the violations in GOLD: missed them all


def test_a_file_with_two_strategies_needs_one_picked(runs, tmp_path):
    both = tmp_path / "both.jsonl"
    raw = _traces(tmp_path / "raw.jsonl", VERDICTS["teacher"], strategy="raw")
    both.write_text(runs["base"].read_text() + raw.read_text(), encoding="utf-8")
    with pytest.raises(RunEvaluationError, match="2 strategy rows"):
        run_f1(both, "base")
    assert run_f1(both, "base", group="raw").f1 == pytest.approx(1.0)
    assert run_f1(both, "base", group="cdg").cases == frozenset(f"case-{i}" for i in range(8))


def test_labels_from_the_cases_file_override_the_traces(runs, tmp_path):
    cases = tmp_path / "cases.jsonl"
    # Relabel case-4 a violation: the base's verdict on it (violation) becomes a true positive.
    rows = [{"id": f"case-{i}", "model_response": "ok", "label": "negative" if g or i == 4 else "positive"}
            for i, g in enumerate(GOLD)]
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    from workbench.audit.cases import load_cases

    labels = {c.id: c.label for c in load_cases(str(cases))}
    assert run_f1(runs["base"], "base", labels=labels).f1 == pytest.approx(2 * 2 / (2 * 2 + 0 + 3))


def test_the_held_out_cases_cut_a_longer_run_to_them(runs, tmp_path, capsys):
    # The base judge's run covers the 8 cases; the held-out set is cases 0-3 and 4-5.
    held = tmp_path / "held.jsonl"
    rows = [{"id": f"case-{i}", "model_response": "ok", "label": "negative" if GOLD[i] else "positive"}
            for i in (0, 1, 2, 3, 4, 5)]
    held.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    from workbench.audit.cases import load_cases

    labels = {c.id: c.label for c in load_cases(str(held))}
    got = run_f1(runs["base"], "base", labels=labels)
    # base on 0-5: TP 1 (case 0), FN 3, FP 1 (case 4) -> 2/6
    assert got.labelled == 6 and got.cases == frozenset(labels) and got.f1 == pytest.approx(1 / 3)
    args = ["scaling", "recovery", "--runs-cases", str(held), "--json"]
    args += [a for n, p in runs.items() for a in (f"--{n}-run", str(p))]
    assert main(args) == 0
    assert {r["labelled"] for r in json.loads(capsys.readouterr().out)} == {6}
    with pytest.raises(RunEvaluationError, match="no trace of the given cases"):
        run_f1(runs["base"], "base", labels={"elsewhere": "negative"})


def test_both_a_run_and_a_typed_f1_for_one_judge_is_an_error(runs, capsys):
    args = ["scaling", "recovery", "--base-run", str(runs["base"]), "--f1-base", "0.3",
            "--teacher-run", str(runs["teacher"]), "--uniform-run", str(runs["uniform"])]
    assert main(args) == 2
    assert "give --base-run or --f1-base, not both" in capsys.readouterr().err
    assert typed_f1("teacher", 0.9).source == "typed in"


def test_select_reports_recovery_from_the_runs(runs, tmp_path, capsys):
    from pathlib import Path

    outcomes = Path(__file__).resolve().parents[1] / "fixtures" / "scaling" / "outcomes.csv"
    args = ["scaling", "select", str(outcomes), "--teacher", "9", "--student", "4", "--n", "30",
            "--out", str(tmp_path / "sets"), "--model", "nested", "--maxiter", "40"]
    args += [a for n, p in runs.items() for a in (f"--{n}-run", str(p))]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "recovery (F1 base 0.333333, teacher 1):" in out
    recovered = (6 / 7 - 1 / 3) / (2 / 3)
    assert f"headroom  F1 0.857  recovery {recovered:.3f}  ACC 0.875  (8 cases, {runs['headroom']})" in out


def test_a_student_that_never_flags_a_violation_starts_from_f1_zero(tmp_path, capsys):
    # The real case: the 0.5B student says "compliant" to every held-out case. Its F1 is 0,
    # not undefined, so Recovery is the distilled student's share of the teacher's F1.
    never = _traces(tmp_path / "base.jsonl", [False] * 8)
    args = ["scaling", "recovery", "--json", "--base-run", str(never),
            "--teacher-run", str(_traces(tmp_path / "t.jsonl", VERDICTS["teacher"])),
            "--uniform-run", str(_traces(tmp_path / "u.jsonl", VERDICTS["uniform"]))]
    assert main(args) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["uniform"]["recovery"] == pytest.approx(F1["uniform"] / F1["teacher"])


def test_an_f1_gain_from_flagging_more_while_accuracy_falls_is_flagged(runs, tmp_path, capsys):
    # TP 2 FP 4 FN 2: F1 0.4 beats the base's 0.333, yet 2 of 8 right against the base's 4
    flagger = _traces(tmp_path / "flagger.jsonl", [True, True, False, False, True, True, True, True])
    rows = recovery_from_runs(run_f1(runs["base"], "base"), run_f1(runs["teacher"], "teacher"),
                              [run_f1(flagger, "headroom"), run_f1(runs["uniform"], "uniform")])
    by = {r["model"]: r for r in rows}
    assert by["headroom"]["recovery"] > 0 and by["headroom"]["acc"] == pytest.approx(0.25)
    assert by["headroom"]["flagged"] == pytest.approx(0.75)
    assert "accuracy 0.500 -> 0.250" in by["headroom"]["caution"]
    assert "flags 75% of cases where it flagged 25%" in by["headroom"]["caution"]
    # uniform: F1 and accuracy both rose (5 of 8 right), so its gain stands unqualified
    assert by["uniform"]["acc"] == pytest.approx(0.625) and by["uniform"]["caution"] == ""
    args = ["scaling", "recovery", "--base-run", str(runs["base"]), "--teacher-run",
            str(runs["teacher"]), "--headroom-run", str(flagger)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ACC 0.250" in out and "caution: F1 rose but accuracy" in out


def test_typed_in_figures_carry_no_caution_they_cannot_support(runs):
    rows = recovery_from_runs(typed_f1("base", 0.2), typed_f1("teacher", 0.8),
                              [run_f1(runs["headroom"], "headroom")])
    assert rows[0]["caution"] == "" and rows[0]["acc"] == pytest.approx(7 / 8)


def test_an_uploaded_evaluation_reads_as_its_file_does(runs, tmp_path):
    # the Scaling page hands over an upload's text and name, not a path
    text = runs["headroom"].read_text(encoding="utf-8")
    got = run_f1_text(text, "headroom.jsonl", "headroom")
    assert got == replace(run_f1(runs["headroom"], "headroom"), source="headroom.jsonl")
    assert got.f1 == pytest.approx(6 / 7) and got.acc == pytest.approx(7 / 8)
    with pytest.raises(RunEvaluationError, match="holds no audit traces"):
        run_f1_text('{"not": "a trace"}\n', "notes.jsonl", "base")


def test_a_teacher_below_the_base_gives_no_flag_more_caution_for_a_falling_f1(runs):
    # base F1 6/7 > teacher 4/7: Recovery of a student whose F1 fell to 1/3 is positive, but
    # the caution speaks of an F1 that rose, which did not happen here
    rows = recovery_from_runs(run_f1(runs["headroom"], "base"), run_f1(runs["uniform"], "teacher"),
                              [run_f1(runs["base"], "headroom")])
    assert rows[0]["recovery"] > 0 and rows[0]["acc"] < 7 / 8
    assert rows[0]["caution"] == ""


@pytest.mark.parametrize("text", ['[{"f1": 0.5}]', '[{"group": "cdg", "f1": 0.5, "labelled": [1]}]',
                                  '[{"group": "cdg", "f1": 0.5, "labelled": "3x"}]', "[]"])
def test_a_malformed_metrics_file_is_refused_saying_what_to_give(text):
    with pytest.raises(RunEvaluationError, match="not the output of `workbench metrics --json`") as err:
        run_f1_text(text, "upload.json", "teacher")
    assert "teacher evaluation upload.json" in str(err.value)
