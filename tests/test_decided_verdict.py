"""The decided record (issue 53): one verdict per case, with the rule and the words behind it.

Hand-built traces under hand-set settings; every label rule of
``workbench.decision.decided_verdict`` is checked here, and each surface that reads the
record is checked to say what the record says (the demo-wide check of every surface is
``tests/test_decided_demo.py``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditError, AuditTrace, Verdict
from workbench.decision import (
    ACTIVATIONS,
    COMPLIANT,
    JUDGE,
    REVIEW,
    VIOLATION,
    DecisionSetting,
    Explanation,
    decided_verdict,
    decided_verdicts,
    reviewed_truth,
    says_complies,
    setting_for,
)
from workbench.review.decisions import ReviewDecision, validate_decision
from workbench.review.queue import agreement, build_queue, decision_on, shown_stands

REPLY = "I have refunded the full amount to your new card ending 4242."
T0 = datetime(2026, 1, 1, tzinfo=UTC)
# An activation setting: a violation from a calibrated 0.5, scores attached per case.
ACT = DecisionSetting(0.5, {"a": 1.0, "b": 0.0}, scorer={"kind": "probe"})


def trace(cid="c1", violation=False, rules=(), p=0.2, reason="The REPLY complies with all the "
          "policy items.", evidence=(), error=None, units=("R1", "R2")) -> AuditTrace:
    return AuditTrace(id=cid, strategy="cdg", units=list(units), closure={"desk": list(units)},
                      verdict=None if error else Verdict(violation, reason, list(rules),
                                                          probability=p,
                                                          evidence=list(evidence)),
                      error=AuditError("ModelCallError", "timeout") if error else None)


def saved(**scores) -> tuple[int, DecisionSetting]:
    """Version 3 of the activation setting, with ``case id -> raw score`` attached."""
    return 3, DecisionSetting(**{**vars(ACT), "case_scores": {(c, "cdg"): s for c, s in scores.items()}})


def test_the_judges_own_violation_carries_its_rule_and_words():
    quote = {"start": 2, "end": 13, "quote": REPLY[2:13]}
    v = decided_verdict(trace(violation=True, rules=["R2"], p=0.9, reason="Breaks R2.",
                              evidence=[quote]), run="r1")
    assert (v.label, v.rules, v.reason, v.score_source, v.setting_version) == (
        VIOLATION, ("R2",), "Breaks R2.", JUDGE, None)
    assert v.evidence == (quote,) and v.score == pytest.approx(0.9)


def test_a_score_decided_violation_goes_to_review_until_a_rule_is_found():
    # The judge said compliant (p 0.2); the activation score (raw 2.0 -> 0.88) says violation.
    t = trace()
    v = decided_verdict(t, run="r1", saved=saved(c1=2.0))
    assert v.label == REVIEW and v.needs_rule and v.score_decided
    assert v.score_source == ACTIVATIONS and v.setting_version == 3
    assert v.score == pytest.approx(1 / (1 + 2.718281828 ** -2.0), rel=1e-6)
    assert "No rule has been found" in v.doubt and not says_complies(v.reason)
    found = Explanation("R1", ({"start": 0, "end": 6, "quote": REPLY[:6]},), "Refunds to a new card.")
    v = decided_verdict(t, run="r1", saved=saved(c1=2.0), explanation=found)
    assert (v.label, v.rules, v.reason, v.reason_by) == (VIOLATION, ("R1",),
                                                         "Refunds to a new card.", "explain")
    assert v.evidence[0]["quote"] == REPLY[:6]


def test_no_violation_ever_shows_a_complies_reason():
    t = trace()
    # A found rule whose reason says "complies" gets the workbench's sentence instead.
    v = decided_verdict(t, saved=saved(c1=2.0),
                        explanation=Explanation("R1", reason="The REPLY complies with R1."))
    assert v.label == VIOLATION and not says_complies(v.reason) and "R1" in v.reason
    # A rule outside the judged closure is never a rule behind the label.
    v = decided_verdict(t, saved=saved(c1=2.0), explanation=Explanation("R9", reason="R9"))
    assert v.label == REVIEW and v.rules == ()
    # None found: the card says so plainly, the case goes to review.
    v = decided_verdict(t, saved=saved(c1=2.0),
                        explanation=Explanation(None, rejected_rule="R77"))
    assert v.label == REVIEW and "No rule was found" in v.doubt and "R77" in v.doubt
    # The judge said violation in words that say it complies: the label stands, the reason
    # is the workbench's sentence naming the rule.
    v = decided_verdict(trace(violation=True, rules=["R1"], p=0.9))
    assert v.label == VIOLATION and v.reason == "The judge answered violation (R1)."
    # The judge said violation but named only an id outside the closure: no violation without
    # a rule of its closure, so the case is to review, saying why, until one is found.
    v = decided_verdict(trace(violation=True, rules=["R9"], p=0.9, reason="Breaks R9."))
    assert (v.label, v.rules, v.needs_rule) == (REVIEW, (), True)
    assert "the judge named no rule of the closure" in v.doubt and "R9" in v.doubt
    # The same when it named no rule at all, and when asking found none.
    v = decided_verdict(trace(violation=True, rules=[], p=0.9, reason="Breaks the policy."))
    assert v.label == REVIEW and "the judge named no rule of the closure" in v.doubt
    v = decided_verdict(trace(violation=True, rules=["R9"], p=0.9, reason="Breaks R9."),
                        explanation=Explanation(None, rejected_rule="R77"))
    assert v.label == REVIEW and "R77" in v.doubt and not says_complies(v.doubt)
    v = decided_verdict(trace(violation=True, rules=["R9"], p=0.9, reason="Breaks R9."),
                        explanation=Explanation("R2", reason="Skips R2."))
    assert (v.label, v.rules, v.reason_by) == (VIOLATION, ("R2",), "explain")


COMPLIES = [
    "The REPLY complies with all the policy items.", "The reply is fully compliant.",
    "No violation.", "The reply doesn't violate any rule.", "It adheres to MOR-R001.",
    "The agent acted in compliance with the refund policy.", "No policy items are violated.",
    "The reply follows the policy.", "It is compliant.", "The reply does not violate R2.",
    "No rule is violated.", "The reply violates no rule.", "Nothing is violated.",
    "The agent is entirely compliant with R3.", "There is no violation here.",
]
DOES_NOT_COMPLY = [
    "The reply is not compliant.", "The reply does not comply with R2.",
    "The agent is non-compliant with R1.", "The reply is not fully compliant: it skips R2.",
    "The reply is not in compliance with R4.", "The agent does not adhere to R1.",
    "The agent failed to follow the policy on refunds.", "The reply doesn't follow the policy.",
    "Refunding to a new card violates MOR-R003.", "The reply breaks R2 by refunding.",
    "It never complies with R5.", "The agent partially complies but skips R2.",
    "The reply should be compliant with R2 but refunds without a return.",
]


@pytest.mark.parametrize("reason", COMPLIES)
def test_each_way_of_saying_the_reply_complies_is_read_so(reason):
    assert says_complies(reason)
    # Under the judge's violation naming a rule, such words never stand as the reason.
    v = decided_verdict(trace(violation=True, rules=["R1"], p=0.9, reason=reason))
    assert v.label == VIOLATION and v.reason == "The judge answered violation (R1)."


@pytest.mark.parametrize("reason", DOES_NOT_COMPLY)
def test_words_of_a_violation_are_not_read_as_complying(reason):
    assert not says_complies(reason)
    v = decided_verdict(trace(violation=True, rules=["R1"], p=0.9, reason=reason))
    assert v.label == VIOLATION and v.reason == reason


def test_a_compliant_decision_over_the_judges_violation_says_which_way_each_went():
    t = trace(violation=True, rules=["R2"], p=0.9, reason="Breaks R2 by refunding.")
    v = decided_verdict(t, saved=saved(c1=-3.0))
    assert v.label == COMPLIANT and v.rules == () and v.evidence == ()
    assert v.reason_by == "workbench" and "said violation (R2)" in v.reason
    assert v.judge_violation is True and v.judge_reason == "Breaks R2 by refunding."


def test_which_setting_applies_is_one_function():
    t = trace()
    assert setting_for(None, t) is None
    assert setting_for(saved(c1=1.0), t)[0] == 3
    # An activation setting without this case's score does not apply: the default decides.
    assert setting_for(saved(other=1.0), t) is None
    v = decided_verdict(t, saved=saved(other=1.0))
    assert (v.label, v.score_source, v.setting_version) == (COMPLIANT, JUDGE, None)
    # A verbal setting applies to every trace.
    assert setting_for((5, DecisionSetting(0.1)), t)[0] == 5


def test_an_unjudged_case_is_to_review_with_its_error():
    v = decided_verdict(trace(error=True))
    assert v.label == REVIEW and "the model call failed: timeout" in v.doubt and v.decided is None
    assert "ModelCallError" not in v.doubt  # the code stays in the trace, not on the card


def test_the_record_as_json_has_every_field_the_command_prints():
    v = decided_verdict(trace(violation=True, rules=["R1"], p=0.9, reason="Breaks R1."), run="r")
    row = json.loads(json.dumps(v.to_json()))
    for name in ("case", "label", "score", "score_source", "setting_version", "rules",
                 "evidence", "reason", "review"):
        assert name in row
    assert row["review"] is None and row["judge"]["violation"] is True


# -- review decisions against the label shown ------------------------------------------------

def test_an_overturn_of_a_score_decided_violation_says_compliant_everywhere():
    t = trace()
    found = Explanation("R1", reason="Refunds to a new card.")
    v = decided_verdict(t, run="r1", saved=saved(c1=2.0), explanation=found)
    assert v.label == VIOLATION and v.judge_violation is False
    d = validate_decision(decision_on(v, "demo", "ada", "overturn", "the refund was allowed"))
    assert (d.shown, d.shown_source, d.setting_version, d.analyst_label) == (
        VIOLATION, ACTIVATIONS, 3, COMPLIANT)
    assert d.analyst_violation is False and d.shown_violation is True
    # Calibration and training read the analyst: compliant, over a gold "violation".
    assert reviewed_truth({"c1": True}, [d]) == {"c1": False}
    # Analysts vs gold and the agreement read it too.
    items = build_queue([("r1", t)], {"c1": "positive"}, "demo", verdicts={v.key: v})
    a = agreement([d], items)
    assert (a.decisions, a.overturned, a.share_confirmed) == (1, 1, 0.0)
    assert a.analysts_gold == 1.0 and a.judge_gold == 0.0
    # The record shows the review state.
    again = decided_verdict(t, run="r1", saved=saved(c1=2.0), explanation=found, decisions=[d])
    assert again.review.to_dict() == {"decision": "overturn", "shown": VIOLATION,
                                      "analyst_label": COMPLIANT, "reviewer": "ada"}


def test_confirm_and_wrong_rule_stand_behind_the_label_shown():
    v = decided_verdict(trace(), run="r1", saved=saved(c1=2.0),
                        explanation=Explanation("R1", reason="x"))
    assert decision_on(v, "demo", "ada", "confirm").analyst_label == VIOLATION
    wrong = validate_decision(decision_on(v, "demo", "ada", "wrong-rule", "R2 applies"))
    assert wrong.analyst_label == VIOLATION  # "wrong rule" is on every violation card
    compliant = decided_verdict(trace(), run="r1")
    with pytest.raises(ValueError, match="no rule stands behind it"):
        validate_decision(decision_on(compliant, "demo", "ada", "wrong-rule", "R2"))
    # A case to review stands for what its score decided.
    pending = decided_verdict(trace(), run="r1", saved=saved(c1=2.0))
    assert shown_stands(pending) is True
    d = decision_on(pending, "demo", "ada", "overturn", "fine")
    assert (d.shown, d.analyst_label) == (REVIEW, COMPLIANT)


def test_old_decisions_keep_their_meaning_and_undone_ones_do_not_count():
    old = ReviewDecision("demo", "r1", "c1", "cdg", "ada", "overturn", "no", True, T0, id=1)
    assert old.analyst_violation is False and old.shown_violation is True
    undo = ReviewDecision("demo", "r1", "c1", "cdg", "ada", "undo", "", True, T0, id=2, undoes=1)
    assert reviewed_truth({"c1": True}, [old, undo]) == {"c1": True}


def test_queue_reasons_come_from_the_record_never_the_judges_hidden_words():
    t1 = trace("c1")  # judge compliant, the score decides violation, no rule yet
    t2 = trace("c2", violation=True, rules=["R1"], p=0.95, reason="Breaks R1.")
    t3 = trace("c3", p=0.05)  # compliant, sure of it
    records = [("r", t1), ("r", t2), ("r", t3)]
    s = saved(c1=2.0, c2=3.0, c3=-4.0)
    verdicts = {v.key: v for v in decided_verdicts(records, s)}
    items = build_queue(records, {"c1": "negative", "c2": "positive", "c3": "positive"}, "demo",
                        verdicts=verdicts)
    got = {i.case_id: i.reasons for i in items}
    assert got == {"c1": ("in-doubt",), "c2": ("decided-violation", "gold-mismatch"), "c3": ()}
    # With the rule found, c1 is a decided violation agreeing with its gold label.
    found = {("r", "c1", "cdg"): Explanation("R2", reason="Breaks R2.")}
    verdicts = {v.key: v for v in decided_verdicts(records, s, found)}
    items = build_queue(records, {"c1": "negative"}, "demo", verdicts=verdicts)
    assert items[0].reasons == ("decided-violation",) and items[0].verdict.rules == ("R2",)


# -- "Find the rule" ---------------------------------------------------------------------------

class Scripted:
    """A stand-in gateway answering complete_json from a script (one answer per ask; a
    validator's refusal takes the next answer, as the gateway's one repair does)."""

    def __init__(self, *answers: dict):
        self.answers, self.asked = list(answers), []

    def complete_json(self, role, messages, schema, schema_name="answer", step="", validate=None,
                      use_cache=True, **_):
        from workbench.llm.errors import ModelCallError
        from workbench.llm.gateway import CallResult
        from workbench.llm.usage import Usage

        self.asked.append(messages)
        for _attempt in range(2):
            if not self.answers:
                break
            data = self.answers.pop(0)
            try:
                checked = validate(data) if validate else None
            except ValueError:
                continue
            usage = Usage(10, 5, 1.0, None, False, "stand-in", role, step)
            return CallResult(data, json.dumps(data), usage, f"key-{len(self.asked)}", checked)
        raise ModelCallError("still invalid", role=role, model="stand-in", kind="invalid_output")


def _case() -> AuditCase:
    return AuditCase("c1", REPLY, context="user: refund me please")


def _judged() -> AuditTrace:
    t = trace()
    t.context = "[R1] Refund only to the original card.\n[R2] Confirm the order first."
    return t


def test_find_the_rule_asks_on_the_judges_own_conversation_and_validates():
    from workbench.audit.judge.explain import explain_messages, explain_violation
    from workbench.audit.judge.whole import judge_messages

    case, t = _case(), _judged()
    msgs = explain_messages(case, t, 0.87)
    assert msgs[:2] == judge_messages(case, t.context)  # the judge's prompt, for the cache
    assert msgs[2]["role"] == "assistant" and json.loads(msgs[2]["content"])["violation"] is False
    assert msgs[3]["role"] == "user" and "87 %" in msgs[3]["content"]
    gw = Scripted({"rule": "R7", "evidence": [], "reason": "x"},  # not in the closure: repaired
                  {"rule": "[R1]", "evidence": ["new card ending 4242", "not in the reply"],
                   "reason": "Refunds to a new card, not the original."},
                  {"rule": "R1", "evidence": ["new card ending 4242"],
                   "reason": "Refunds to a new card, not the original."})
    found = explain_violation(gw, case, t, 0.87).explanation
    assert found.rule == "R1" and found.refused == 1  # the made-up quote: asked once more
    assert [e["quote"] for e in found.evidence] == ["new card ending 4242"]
    v = decided_verdict(t, saved=saved(c1=2.0), explanation=found)
    assert v.label == VIOLATION and v.rules == ("R1",)


def test_find_the_rule_says_plainly_when_none_is_found():
    from workbench.audit.judge.explain import CannotExplain, explain_violation

    case, t = _case(), _judged()
    none = explain_violation(Scripted({"rule": "", "evidence": [], "reason": "none"}), case, t)
    assert none.explanation.rule is None
    bad = explain_violation(Scripted({"rule": "R8", "evidence": [], "reason": "x"},
                                     {"rule": "R9", "evidence": [], "reason": "x"}), case, t)
    assert bad.explanation.rule is None and bad.explanation.rejected_rule
    assert decided_verdict(t, saved=saved(c1=2.0), explanation=bad.explanation).label == REVIEW
    t.parts = [object()]  # judged in parts: nothing whole to ask about again
    with pytest.raises(CannotExplain, match="parts"):
        explain_violation(Scripted(), case, t)


def test_rule_finding_counts_gold_rules_and_evidence_apart():
    from workbench.audit.judge.explain import rule_finding

    words = ({"start": 0, "end": 4, "quote": "I ha"},)
    score = [decided_verdict(trace(f"s{i}"), saved=saved(**{f"s{i}": 2.0}),
                             explanation=Explanation(rule, words if i == 0 else (), "x"))
             for i, rule in enumerate(["R1", "R2", None])]
    judge = [decided_verdict(trace("j1", violation=True, rules=["R1"], p=0.9, reason="R1",
                                   evidence=list(words)))]
    got = {f.kind: f.as_dict() for f in rule_finding(score + judge, {"s0": ["R1"], "s1": ["R1"],
                                                                     "s2": ["R2"], "j1": ["R1"]})}
    assert got["score-decided"] == {"kind": "score-decided", "violations": 3, "with_rule": 2,
                                    "with_gold_rules": 3, "gold_rule": 1,
                                    "share_gold_rule": 1 / 3, "with_evidence": 1,
                                    "share_with_evidence": 1 / 3}
    assert got["judge-decided"]["gold_rule"] == 1 and got["judge-decided"]["with_evidence"] == 1


# -- surfaces that read the record -------------------------------------------------------------

def _found() -> tuple[AuditTrace, tuple[int, DecisionSetting], dict]:
    t = _judged()
    return t, saved(c1=2.0), {("c1", "cdg"): Explanation("R1", reason="Refunds to a new card.")}


def test_exports_write_the_records_label_rule_and_reason():
    from workbench.export import judged_cases, langfuse_payload, otlp_json, otlp_request

    t, (version, setting), found = _found()
    cases = judged_cases([t], [_case()], setting, setting_version=version, explanations=found).cases
    assert [(c.label, c.violated_rules, c.explanation) for c in cases] == [
        (VIOLATION, ["R1"], "Refunds to a new card.")]
    events = otlp_json(otlp_request(cases))
    attrs = {a["key"]: a["value"] for a in
             events["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["attributes"]}
    assert attrs["gen_ai.evaluation.score.label"]["stringValue"] == VIOLATION
    assert "complies" not in attrs["gen_ai.evaluation.explanation"]["stringValue"]
    score = langfuse_payload(cases)["batch"][0]["body"]
    assert score["value"] == VIOLATION and score["metadata"]["setting_version"] == version


def test_parquet_rows_hold_the_record_under_an_activation_setting(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from workbench.audit import parquet

    t, (_v, setting), _found_ = _found()
    parquet.write_traces([t], tmp_path / "t.parquet", setting)
    row = pq.read_table(tmp_path / "t.parquet", columns=[
        "decided_violation", "decided_label", "score_source", "rules"]).to_pylist()[0]
    # The activation score decided violation; no rule found yet here: to review.
    assert row == {"decided_violation": True, "decided_label": REVIEW,
                   "score_source": ACTIVATIONS, "rules": []}


def test_the_ci_gate_fails_what_a_person_must_still_check():
    from workbench.audit.ci_gate import FailOn, outcome

    t, s, _ = _found()
    assert outcome("c1", t, FailOn()).status == "passed"  # the judge's words: compliant
    o = outcome("c1", t, FailOn(), saved=s)
    assert o.status == "failed" and "to review" in o.message


def test_alerts_decide_from_the_record():
    from workbench.alerts.rules import AlertRule, RuleKind, new_violations, share_fired

    t, s, _ = _found()
    rule = AlertRule("watch", RuleKind.VIOLATION)
    assert new_violations(rule, [t], "demo") == []  # the judge's words alone: compliant
    [fired] = new_violations(rule, [t], "demo", s)
    assert fired.payload["label"] == REVIEW and fired.payload["score_source"] == ACTIVATIONS
    assert new_violations(AlertRule("high", RuleKind.VIOLATION, probability=0.95), [t], "demo", s) == []
    share = AlertRule("share", RuleKind.SHARE, window=1, share=0.5)
    assert share_fired(share, [t], "demo", False, s)[0] is not None


def test_the_api_answers_with_the_record():
    from workbench.api.service import response_body

    t, s, _ = _found()

    class Index:
        def __contains__(self, name):
            return False

    body = response_body(t, Index(), s)
    assert body["verdict"] == REVIEW and body["violation"] is None and body["judge"] == COMPLIANT
    assert body["decided"]["score_source"] == ACTIVATIONS


def test_metrics_count_the_records_labels_and_the_ones_to_review():
    from workbench.audit.metrics import compute_metrics

    t, (_v, setting), found = _found()
    t.label = "negative"
    [m] = compute_metrics([t], threshold=setting, activations={"c1": 2.0})
    assert (m.to_review, m.tp, m.acc) == (1, 0, 0.0)  # a case to review is no decision
    v = decided_verdict(t, saved=(1, setting), explanation=found[("c1", "cdg")])
    [m] = compute_metrics([t], verdicts={("c1", "cdg"): v})
    assert (m.to_review, m.tp, m.acc) == (0, 1, 1.0)
    [m] = compute_metrics([t])  # no record: the judge's own yes/no, the papers' figure
    assert (m.tp, m.fn) == (0, 1)


def test_lists_beside_the_card_say_what_the_card_says():
    from components.case_table import case_rows, picker_rows, queue_rows
    from components.start_here import decided_line

    t, s, found = _found()
    v = decided_verdict(t, run="r", saved=s, explanation=found[("c1", "cdg")])
    verdicts = {v.key: v}
    assert case_rows("demo", [("r", t)], {"c1": "negative"}, verdicts)[0]["verdict"] == VIOLATION
    assert picker_rows("demo", ["c1"], [("r", t)], {}, verdicts)[0]["verdict"] == VIOLATION
    [item] = build_queue([("r", t)], None, "demo", verdicts=verdicts)
    row = queue_rows("demo", [item], [], {})[0]
    assert row["verdict"] == VIOLATION and row["how sure"].startswith("likely violation")
    assert decided_line("demo", [VIOLATION, COMPLIANT, REVIEW], 1, 2).startswith(
        "On the stored dataset demo the workbench decides 1 violation and 1 compliant reply "
        "and sends 1 to review; 1 of the 2")


def test_a_case_scored_only_is_decided_by_its_activation_score_and_explained():
    """``workbench audit --score-only`` keeps no answer, only the activations: the score
    decides, a violation goes to review until its rule is found, and "Find the rule" asks on
    the prompt the score read (the judge's question with the rule question appended)."""
    from workbench.audit.judge.explain import explain_messages, explain_violation, to_explain
    from workbench.audit.judge.whole import judge_messages
    from workbench.export import judged_cases

    t = _judged()
    t.verdict = None
    assert decided_verdict(t).label == REVIEW and decided_verdict(t).decided is None
    v = decided_verdict(t, run="r", saved=saved(c1=2.0))
    assert (v.label, v.score_source, v.judge_violation) == (REVIEW, ACTIVATIONS, None)
    assert "was not asked" in v.doubt and to_explain([v]) == [v]
    calm = decided_verdict(t, run="r", saved=saved(c1=-3.0))
    assert calm.label == COMPLIANT and "was not asked" in calm.reason
    msgs = explain_messages(_case(), t, 0.88)
    judge = judge_messages(_case(), t.context)
    assert len(msgs) == 2 and msgs[0] == judge[0]
    assert msgs[1]["content"].startswith(judge[1]["content"]) and "88 %" in msgs[1]["content"]
    found = explain_violation(Scripted({"rule": "R2", "evidence": [], "reason": "Skips R2."}),
                              _case(), t, 0.88).explanation
    v = decided_verdict(t, run="r", saved=saved(c1=2.0), explanation=found)
    assert (v.label, v.rules) == (VIOLATION, ("R2",))
    [item] = build_queue([("r", t)], None, "demo", verdicts={v.key: v})
    assert item.reasons == ("decided-violation",)
    [case] = judged_cases([t], [], saved(c1=2.0)[1], explanations={("c1", "cdg"): found}).cases
    assert case.label == VIOLATION and case.judge_violation is None
