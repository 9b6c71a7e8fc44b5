"""Conversation-bootstrap intervals of Recovery (how sure a Recovery from 30 cases is)."""

from __future__ import annotations

import json
import math

import pytest

from workbench.cli import main
from workbench.scaling.recovery_bootstrap import CaseVerdict, recovery_intervals, violation_f1

# 12 cases in 6 conversations of two cases each: one violation and one compliant reply.
GOLD = [(f"c{i}", f"conv{i // 2}", i % 2 == 0) for i in range(12)]


def _judge(said: list[bool | None]) -> list[CaseVerdict]:
    return [CaseVerdict(cid, conv, gold, s) for (cid, conv, gold), s in zip(GOLD, said, strict=True)]


PERFECT = [gold for _, _, gold in GOLD]
SILENT = [False] * 12


def test_f1_leaves_out_cases_without_a_verdict_and_is_nan_with_nothing_to_find():
    said = PERFECT[:]
    said[0] = None  # a violation the judge never answered: neither found nor missed
    assert violation_f1(_judge(said)) == pytest.approx(1.0)
    assert violation_f1(_judge(SILENT)) == 0.0
    compliant_only = [CaseVerdict("x", "s", False, False)]
    assert math.isnan(violation_f1(compliant_only))


def test_a_student_as_good_as_the_teacher_recovers_one_in_every_draw():
    boot = recovery_intervals({"base": _judge(SILENT), "teacher": _judge(PERFECT),
                               "uniform": _judge(PERFECT), "headroom": _judge(SILENT)}, draws=300)
    assert boot["recovery"] == {"uniform": [1.0, 1.0], "headroom": [0.0, 0.0]}
    assert boot["headroom_minus_uniform_f1"] == [-1.0, -1.0]
    assert (boot["cases"], boot["conversations"], boot["skipped"]) == (12, 6, 0)


def test_intervals_widen_with_a_noisy_student_and_are_reproducible():
    noisy = [True, False, False, True, True, True, False, False, True, False, False, False]
    judges = {"base": _judge(SILENT), "teacher": _judge(PERFECT), "uniform": _judge(noisy)}
    boot = recovery_intervals(judges, draws=500, seed=3)
    lo, hi = boot["recovery"]["uniform"]
    point = violation_f1(_judge(noisy))  # base 0, teacher 1: Recovery = the student's F1
    assert lo < point < hi and hi - lo > 0.2
    assert recovery_intervals(judges, draws=500, seed=3) == boot
    assert boot["headroom_minus_uniform_f1"] is None  # one student: no difference to give


def test_judges_on_different_cases_are_refused():
    with pytest.raises(ValueError, match="the uniform verdicts cover other cases"):
        recovery_intervals({"base": _judge(SILENT), "teacher": _judge(PERFECT),
                            "uniform": _judge(PERFECT)[:-1]})


def test_the_command_bootstraps_traces_and_refuses_metrics_json(tmp_path, capsys):
    from workbench.audit.trace import AuditTrace, Verdict
    from workbench.audit.trace_file import encode_trace

    def traces(name, said):
        lines = [encode_trace(AuditTrace(id=cid, strategy="cdg", session=conv,
                                         label="negative" if gold else "positive",
                                         verdict=Verdict(violation=s, reason="r", violated_rules=[])))
                 for (cid, conv, gold), s in zip(GOLD, said, strict=True)]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    noisy = [True, False, False, True, True, True, False, False, True, False, False, False]
    paths = {"base": traces("base", SILENT), "teacher": traces("teacher", PERFECT),
             "uniform": traces("uniform", noisy)}
    args = ["scaling", "recovery", "--bootstrap", "400", "--json"]
    args += [a for n, p in paths.items() for a in (f"--{n}-run", str(p))]
    assert main(args) == 0
    [row] = json.loads(capsys.readouterr().out)
    expected = recovery_intervals({"base": _judge(SILENT), "teacher": _judge(PERFECT),
                                   "uniform": _judge(noisy)}, draws=400)
    assert row["recovery_ci"] == expected["recovery"]["uniform"]
    assert row["bootstrap"]["conversations"] == 6
    assert main(["metrics", str(paths["uniform"]), "--json"]) == 0
    metrics = tmp_path / "uniform.json"
    metrics.write_text(capsys.readouterr().out, encoding="utf-8")
    args = ["scaling", "recovery", "--bootstrap", "400", "--base-run", str(paths["base"]),
            "--teacher-run", str(paths["teacher"]), "--uniform-run", str(metrics)]
    assert main(args) != 0
    assert "only traces hold" in capsys.readouterr().err
