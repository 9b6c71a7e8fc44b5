"""The built-in activation scorer is the default (issue 57 item 3): a dataset or a run with
activations and no saved setting is decided by it, before anyone labels a case; a saved
setting still wins, and without activations the judge's words decide as before. Here the
built-in scorer is a hand-made probe on one feature (monkeypatched in), so every figure can be
checked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.audit.cases import case_from_dict
from workbench.audit.trace import AuditTrace, Verdict
from workbench.decision import _prior
from workbench.decision import features as ff
from workbench.decision.scorers import Probe

FEATURE = 120  # the mean over the reply at layer 20


@pytest.fixture()
def builtin(tmp_path, monkeypatch):
    """A built-in scorer that reads dimension 0 of feature 120: larger = violation."""
    from workbench.decision import DecisionSetting

    probe = Probe(FEATURE, np.zeros(3), np.ones(3), np.array([1.0, 0.0, 0.0]), 0.0, 0.1)
    setting = DecisionSetting(threshold=0.5, calibration={"a": 1.0, "b": 0.0},
                              scorer=probe.to_dict(), fitted_on={"builtin": True})
    path = tmp_path / "builtin_scorer.json"
    path.write_text(json.dumps({"kind": "builtin-scorer", "setting": setting.to_dict(),
                                "about": {"chosen": "probe"}}))
    monkeypatch.setattr(_prior, "BUILTIN_FILE", path)
    _prior._builtin_data.cache_clear()
    yield probe
    _prior._builtin_data.cache_clear()


# Four cases: the judge's words rank them backwards, dimension 0 of feature 120 rightly.
CASES = [("v1", "negative", 0.2, 3.0), ("v2", "negative", 0.3, 2.0),
         ("c1", "positive", 0.8, -2.0), ("c2", "positive", 0.7, -3.0)]


def _write_run(tmp_path, with_features: bool):
    traces = tmp_path / "run.jsonl"
    cases = tmp_path / "cases.jsonl"
    lines, case_lines = [], []
    for cid, label, p, _ in CASES:
        t = AuditTrace(id=cid, strategy="cdg", session=f"s-{cid}", label=label, context="[R1] x",
                       judge_mode="whole",
                       verdict=Verdict(violation=p >= 0.5, reason="r", violated_rules=[],
                                       probability=p))
        lines.append(json.dumps(t.to_dict()))
        case_lines.append(json.dumps(case_from_dict(
            {"id": cid, "label": label, "session": f"s-{cid}", "model_response": "ok",
             "conversation": [{"role": "user", "content": "hi"}]}).to_dict()))
    traces.write_text("\n".join(lines) + "\n")
    cases.write_text("\n".join(case_lines) + "\n")
    if with_features:
        folder = ff.features_dir(traces)
        for cid, _, _, value in CASES:
            arr = np.array([[value, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=np.float32)
            ff.append(folder, ff.new_record(cid, "cdg", "sha", "embedded", (FEATURE, 20), 10, 1.0),
                      arr)
    return traces, cases


def test_metrics_of_a_run_with_activations_and_no_saved_setting_use_the_builtin_scorer(
        builtin, tmp_path, capsys, monkeypatch):
    from workbench.cli import main

    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "wb.db"))
    traces, cases = _write_run(tmp_path, with_features=True)
    assert main(["metrics", str(traces), "--cases", str(cases), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["score_source"] == "activations" and row["scorer"] == "built-in"
    assert row["auroc"] == 1.0  # the words ranked them backwards (0.0)
    assert row["acc_at_threshold"] == 1.0  # sigmoid(3), sigmoid(2) >= 0.5 > sigmoid(-2)...
    # the same run without activations: the judge's words, as before
    bare = tmp_path / "bare"
    bare.mkdir()
    traces, cases = _write_run(bare, with_features=False)
    assert main(["metrics", str(traces), "--cases", str(cases), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["score_source"] == "judge" and row["scorer"] == "" and row["auroc"] == 0.0


def test_a_stored_dataset_with_activations_is_decided_by_the_builtin_unless_a_setting_is_saved(
        builtin, engine):
    from store.activations import save_features
    from store.audit_repo import save_cases, save_traces
    from store.thresholds import save_threshold
    from store.verdicts import dataset_verdicts, saved_setting
    from workbench.decision import BUILTIN_VERSION, DecisionSetting
    from workbench.identity.roles import COMMAND_LINE

    cases = [case_from_dict({"id": cid, "label": label, "session": f"s-{cid}",
                             "model_response": "ok",
                             "conversation": [{"role": "user", "content": "hi"}]})
             for cid, label, _, _ in CASES]
    save_cases(engine, "d", cases, actor=COMMAND_LINE)
    assert saved_setting(engine, "d") is None  # no activations: the judge's words
    traces = [AuditTrace(id=cid, strategy="cdg", session=f"s-{cid}", label=label,
                         context="[R1] x", judge_mode="whole", units=["R1"],
                         verdict=Verdict(violation=False, reason="It complies.",
                                         violated_rules=[], probability=p))
              for cid, label, p, _ in CASES]
    save_traces(engine, traces, "run-1", "d", actor=COMMAND_LINE)
    save_features(engine, "d", [
        (ff.new_record(cid, "cdg", "sha", "embedded", (FEATURE,), 10, 1.0),
         np.array([[value, 0.0, 0.0]], dtype=np.float32)) for cid, _, _, value in CASES],
        actor=COMMAND_LINE)
    version, setting = saved_setting(engine, "d")
    assert version == BUILTIN_VERSION and setting.fitted_on.get("builtin")
    by_case = {v.case: v for v in dataset_verdicts(engine, "d")}
    assert by_case["c1"].label == "compliant" and by_case["c1"].score_source == "activations"
    assert by_case["c1"].setting_version == BUILTIN_VERSION
    # the score says violation over the judge's "compliant": no rule yet, so "review"
    assert by_case["v1"].label == "review" and by_case["v1"].score > 0.9
    save_threshold(engine, "dataset:d", DecisionSetting(threshold=0.5), base_version=None,
                   actor=COMMAND_LINE)
    version, setting = saved_setting(engine, "d")
    assert version >= 1 and setting.scorer is None  # a saved setting wins


def _gate(tmp_path, out, fail_on="violation"):
    import argparse

    from workbench.commands._ci_gate import GateRun

    args = argparse.Namespace(fail_on=fail_on, junit=None, no_judge=False, out=str(out),
                              strategy="cdg", judge_mode="whole", keywords="llm",
                              cases=str(tmp_path / "cases.jsonl"), index="index.json")
    return GateRun.from_args(args)


def test_the_ci_gate_without_store_decides_a_run_with_activations_by_the_builtin_scorer(
        builtin, tmp_path, capsys):
    """Before: without --store the gate read the judge's words, so it passed the two cases
    every other surface calls violations (the words said compliant at 0.2 and 0.3)."""
    from workbench.audit import load_cases
    from workbench.audit.trace_file import read_traces

    traces, cases = _write_run(tmp_path, with_features=True)
    gate = _gate(tmp_path, traces)
    for t in read_traces(traces)[0]:
        gate.collect(t)
    assert gate.finish(load_cases(cases), []) == 1
    err = capsys.readouterr().err
    assert "built-in activation scorer" in err
    assert "2 failed, 0 could not be judged, 2 passed of 4 cases" in err
    assert "v1" in err and "v2" in err and "c1" not in err.split("2 passed of 4 cases")[1]


def test_the_ci_gate_keeps_the_judges_words_without_activations_or_with_its_own_p(
        builtin, tmp_path, capsys):
    from workbench.audit import load_cases
    from workbench.audit.trace_file import read_traces

    traces, cases = _write_run(tmp_path, with_features=False)
    gate = _gate(tmp_path, traces)
    for t in read_traces(traces)[0]:
        gate.collect(t)
    assert gate.finish(load_cases(cases), []) == 1  # c1, c2: the words said violation
    err = capsys.readouterr().err
    assert "built-in" not in err and "[gate] failed: c1" in err and "[gate] failed: v1" not in err
    # =P names the gate's own threshold on the judge's probability, activations or not
    (tmp_path / "with").mkdir()
    traces2, cases2 = _write_run(tmp_path / "with", with_features=True)
    gate = _gate(tmp_path / "with", traces2, fail_on="violation=0.75")
    for t in read_traces(traces2)[0]:
        gate.collect(t)
    assert gate.finish(load_cases(cases2), []) == 1
    err = capsys.readouterr().err
    assert "built-in" not in err and "[gate] failed: c1" in err and "failed: c2" not in err


def test_the_bench_holdout_decides_unseen_cases_as_the_product_does(builtin, tmp_path):
    """bench/builtin_scorer.py --holdout: the saved scorer on a run it never saw, through
    decided_verdict; the four cases are ranked rightly by the feature, backwards by the words."""
    from bench.builtin_scorer import holdout
    from workbench.decision import _prior

    traces, cases = _write_run(tmp_path, with_features=True)
    got = holdout(traces, cases, _prior.BUILTIN_FILE, 50)
    assert (got["cases"], got["violations"], got["conversations"]) == (4, 2, 4)
    assert got["auroc"] == 1.0 and got["accuracy"] == 1.0
    assert got["judge"]["auroc"] == 0.0 and got["judge"]["accuracy"] == 0.0
