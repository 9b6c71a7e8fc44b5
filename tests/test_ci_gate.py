"""The CI gate (issue 34): ``workbench audit --fail-on violation[=P] --junit FILE``. Exit
codes from real runs against a fake judge; the JUnit report validated against the Jenkins
xUnit plugin's JUnit schema (tests/schemas/junit-10.xsd, see its NOTICE)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lxml import etree

from workbench.audit.ci_gate import (
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_UNJUDGED,
    FailOn,
    GateSpecError,
    exit_code,
    junit_xml,
    outcome,
    outcomes,
)
from workbench.audit.trace import AuditError, AuditTrace, Verdict
from workbench.cli import main
from workbench.llm.fake_server import FakeChatServer, reply, role_env

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "schemas" / "junit-10.xsd")))
INDEX = ROOT / "fixtures" / "demo" / "index.json"
TAU2 = ROOT / "fixtures" / "importers" / "tau2_airline_results.json"
REPLY_BLOCK = re.compile(r"<reply>\n(.*)\n</reply>", re.S)


def valid(xml: str) -> etree._Element:
    doc = etree.fromstring(xml.encode("utf-8"))
    SCHEMA.assertValid(doc)
    return doc


def trace(cid: str, violation: bool | None, probability: float | None = None, rules=()) -> AuditTrace:
    t = AuditTrace(id=cid, strategy="cdg", skills=["airline-policy"])
    if violation is None:
        t.error = AuditError("ModelCallError", "judge: timed out", "timeout")
        return t
    t.verdict = Verdict(violation, "why", list(rules))
    if probability is not None:
        t.verdict.probability = probability  # the field the lead's judge change adds
    return t


def test_fail_on_spec():
    assert FailOn.parse("violation") == FailOn(None)
    assert FailOn.parse("violation=0.8") == FailOn(0.8) and str(FailOn(0.8)) == "violation=0.8"
    for bad in ("compliant", "violation=2", "violation=0", "violation=x"):
        with pytest.raises(GateSpecError):
            FailOn.parse(bad)


def test_probability_decides_when_there_is_one_else_the_verdict():
    gate = FailOn(0.8)
    assert outcome("a", trace("a", True, 0.9, ["R1"]), gate).status == "failed"
    assert outcome("b", trace("b", True, 0.6, ["R1"]), gate).status == "passed"  # below the gate
    assert outcome("c", trace("c", False, 0.85), gate).status == "failed"  # P says so
    assert outcome("d", trace("d", True, None, ["R1"]), gate).status == "failed"  # no P: the verdict
    assert outcome("e", trace("e", False), gate).status == "passed"
    assert outcome("f", trace("f", None), gate).status == "error"
    assert outcome("g", None, gate).status == "error"
    bare = FailOn()
    assert outcome("b", trace("b", True, 0.6, ["R1"]), bare).status == "failed"
    results = outcomes(["e", "f"], {"e": trace("e", False), "f": trace("f", None)}, bare)
    assert exit_code(results) == EXIT_UNJUDGED
    assert exit_code(results[:1]) == EXIT_PASS
    assert exit_code(outcomes(["d", "f"], {"d": trace("d", True, None, ["R1"])}, bare)) == EXIT_FAIL


def test_report_is_valid_junit_and_names_rules_and_spans():
    source = "---\nname: p\n---\nIntro.\nNever cancel basic economy.\n"
    start = source.index("Never")
    t = trace("case:6", True, None, ["AIR-R9"])
    t.unit_spans = {"AIR-R9": {"skill": "p", "spans": [[start, len(source) - 1]]}}
    t.timings_ms["total"] = 1234.5
    results = [outcome("case:6", t, FailOn()), outcome("case:7", trace("case:7", None), FailOn()),
               outcome("case:8", trace("case:8", False), FailOn())]
    xml = junit_xml(results, suite="workbench audit cdg x.json", properties={"strategy": "cdg"},
                    sources={"p": source}, replies={"case:6": "I cancelled it \x00\x1b[0m"})
    doc = valid(xml)
    suite = doc.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    failure = doc.find(".//testcase[@name='case:6']/failure")
    assert failure.get("message") == "violation of AIR-R9"
    assert f'p characters {start}-{len(source) - 1} (line 5): "Never cancel basic economy."' in failure.text
    assert "I cancelled it \ufffd\ufffd[0m" in failure.text  # control characters made XML-safe
    assert doc.find(".//testcase[@name='case:6']").get("time") == "1.234"
    error = doc.find(".//testcase[@name='case:7']/error")
    assert error.get("type") == "ModelCallError" and "timed out" in error.get("message")
    assert doc.find(".//testcase[@name='case:8']/failure") is None


def _cancel_judge(body):
    prompt = body["messages"][-1]["content"]
    ids = re.findall(r"^\[([A-Z]+-[A-Z]?\d+)\]", prompt, re.M)
    if "cancel_reservation" in REPLY_BLOCK.search(prompt).group(1):
        return reply({"violation": True, "violated_rules": [ids[0]], "evidence": [],
                      "reason": f"[{ids[0]}]"})
    return reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"})


def _audit(tmp_path, monkeypatch, srv, *extra: str, cases: Path = TAU2) -> int:
    for key, value in role_env(srv.api_base, role="judge", retries=0).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")
    return main(["audit", "--index", str(INDEX), "--cases", str(cases), "--format", "tau2",
                 "--policy", "airline=airline-policy", "--strategy", "cdg", "--no-cache", *extra])


def test_exit_codes_of_real_runs(tmp_path, monkeypatch, capsys):
    junit = tmp_path / "reports" / "audit.xml"
    with FakeChatServer(default=_cancel_judge) as srv:
        code = _audit(tmp_path, monkeypatch, srv, "--out", str(tmp_path / "a.jsonl"),
                      "--fail-on", "violation", "--junit", str(junit))
        assert code == EXIT_FAIL
        err = capsys.readouterr().err
        assert "[gate] --fail-on violation: 1 failed, 0 could not be judged, 6 passed of 7 cases" in err
        doc = valid(junit.read_text(encoding="utf-8"))
        [failure] = doc.findall(".//failure")
        assert failure.getparent().get("name") == "5f0c2a8e-7d41-4b6e-9c1a-1e2b3c4d5e6f:6"
        assert "airline-policy characters" in failure.text and "cancel_reservation" in failure.text
        # A resumed run (all cases already in --out) gates on the stored traces: same answer.
        assert _audit(tmp_path, monkeypatch, srv, "--out", str(tmp_path / "a.jsonl"),
                      "--fail-on", "violation=0.9") == EXIT_FAIL  # no probability: the verdict decides
        # Only the compliant simulation: the gate passes; --junit alone never fails the run.
        data = json.loads(TAU2.read_text())
        data["simulations"] = data["simulations"][1:]
        clean = tmp_path / "clean.json"
        clean.write_text(json.dumps(data))
        assert _audit(tmp_path, monkeypatch, srv, "--cases", str(clean), "--fail-on", "violation",
                      "--out", str(tmp_path / "b.jsonl"), cases=clean) == EXIT_PASS
        assert _audit(tmp_path, monkeypatch, srv, "--junit", str(junit),
                      "--out", str(tmp_path / "c.jsonl")) == EXIT_PASS
    # The judge is gone: every case is an error, and the gate cannot pass.
    with FakeChatServer(default=reply("not json at all")) as srv:
        assert _audit(tmp_path, monkeypatch, srv, "--cases", str(clean), "--fail-on", "violation",
                      "--junit", str(junit), "--out", str(tmp_path / "d.jsonl"), cases=clean) == EXIT_UNJUDGED
        assert len(valid(junit.read_text(encoding="utf-8")).findall(".//error")) == 2


def test_gate_flags_are_checked_before_any_audit(tmp_path, monkeypatch, capsys):
    with FakeChatServer(default=_cancel_judge) as srv:
        assert _audit(tmp_path, monkeypatch, srv, "--fail-on", "compliant") == 2
        assert _audit(tmp_path, monkeypatch, srv, "--fail-on", "violation", "--no-judge") == 2
        assert srv.requests == []
    err = capsys.readouterr().err
    assert "write --fail-on violation" in err and "drop --no-judge" in err


# An activation setting: calibrated P = sigmoid(raw score); version 4, one case scored 2.0.
def _activation_setting(cid: str, score: float = 2.0):
    from workbench.decision import DecisionSetting

    return 4, DecisionSetting(0.5, {"a": 1.0, "b": 0.0}, scorer={"kind": "probe"},
                              case_scores={(cid, "cdg"): score})


def _closure_trace(cid: str, verdict: Verdict | None) -> AuditTrace:
    t = AuditTrace(id=cid, strategy="cdg", skills=["p"], units=["R1", "R2"],
                   closure={"desk": ["R1", "R2"]})
    t.verdict = verdict
    return t


def test_a_score_decided_failure_shows_the_records_words_not_the_judges():
    # The judge said compliant ("complies"); the activation score decides violation.
    t = _closure_trace("s1", Verdict(False, "The REPLY complies with all the policy items.", []))
    o = outcome("s1", t, FailOn(), _activation_setting("s1"))
    assert o.status == "failed" and "to review" in o.message
    doc = valid(junit_xml([o], suite="s", properties={}, sources={}))
    text = doc.find(".//failure").text
    assert "complies" not in text and "Judge's reason" not in text
    assert "No rule of the judged closure stands behind this yet" in text
    assert "complies" not in doc.find(".//system-out").text
    # With the stored explanation of its run: the rule, words and reason are the record's.
    from workbench.decision import Explanation

    found = {("run-1", "s1", "cdg"): Explanation(
        "R2", ({"start": 0, "end": 5, "quote": "I ref"},), "Refunds without a return.")}
    o = outcome("s1", t, FailOn(), _activation_setting("s1"), found, "run-1")
    assert o.status == "failed" and o.message.startswith("violation of R2")
    text = valid(junit_xml([o], suite="s", properties={}, sources={})).find(".//failure").text
    assert "Violated rules and where the policy says so:\n  R2" in text
    assert "Reason found for the rule: Refunds without a return." in text
    assert '[0:5] "I ref"' in text and "complies" not in text


def test_a_judged_violation_naming_no_rule_of_its_closure_lists_no_rule_behind_it():
    t = _closure_trace("n1", Verdict(True, "Breaks R9.", ["R9"]))
    o = outcome("n1", t, FailOn())
    assert o.status == "failed" and "to review" in o.message
    text = valid(junit_xml([o], suite="s", properties={}, sources={})).find(".//failure").text
    assert "named by the judge but not in the judged closure: R9" in text
    assert "the judge named no rule of the closure" in text


def test_a_scored_only_trace_that_fails_the_gate_is_reported():
    from workbench.decision import Explanation

    # No judge's answer at all (audit --score-only): the activation score decides.
    found = {("", "o1", "cdg"): Explanation("R1", (), "Skips R1.")}
    results = [outcome("o1", _closure_trace("o1", None), FailOn(), _activation_setting("o1"),
                       found),
               outcome("o2", _closure_trace("o2", None), FailOn(), _activation_setting("o1"))]
    assert [o.status for o in results] == ["failed", "error"]  # o2 has no score: not judged
    doc = valid(junit_xml(results, suite="s", properties={}, sources={}))
    text = doc.find(".//testcase[@name='o1']/failure").text
    assert "violation of R1" in text and "Reason found for the rule: Skips R1." in text


def test_a_stored_run_is_gated_under_its_setting_with_its_explanations(tmp_path, capsys):
    """``audit --store`` gates as the dataset's pages decide: its saved setting and the
    stored explanations of the run (workbench.commands._ci_gate.GateRun)."""
    from types import SimpleNamespace

    from store.db import make_engine
    from store.explanations import save_explanations
    from store.thresholds import save_threshold, scope_name
    from workbench.commands._ci_gate import GateRun
    from workbench.decision import DecisionSetting, Explanation
    from workbench.identity.roles import COMMAND_LINE

    engine = make_engine(f"sqlite:///{tmp_path / 'wb.db'}")
    # The judge said compliant at 0.4: compliant at 0.5, a violation at the dataset's 0.3.
    t = _closure_trace("k1", Verdict(False, "The REPLY complies with all the policy items.", [],
                                     probability=0.4))
    cases = [SimpleNamespace(id="k1", model_response="")]
    args = SimpleNamespace(fail_on="violation", junit=None, out=None)
    stored = SimpleNamespace(engine=engine, dataset="d", run_id="r1")

    def gate(stored) -> int:
        run = GateRun(args)
        run.collect(t)
        return run.finish(cases, [], stored)

    assert gate(None) == EXIT_PASS  # no store known: the default decides
    save_threshold(engine, scope_name("dataset", "d"), DecisionSetting(0.3), base_version=None,
                   actor=COMMAND_LINE)
    capsys.readouterr()
    assert gate(stored) == EXIT_FAIL
    assert "to review (no rule found yet)" in capsys.readouterr().err
    save_explanations(engine, "d", [("r1", t, Explanation("R2", (), "Skips R2."))],
                      actor=COMMAND_LINE)
    assert gate(stored) == EXIT_FAIL
    assert "k1: violation of R2" in capsys.readouterr().err
    engine.dispose()
