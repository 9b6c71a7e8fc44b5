"""Evidence in the reply, stricter verdict checks, and EmptySeed for a reply about nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.scripted import ScriptedTransport, scripted_gateway
from workbench.audit import AuditIndex, audit_case
from workbench.audit.cases import AuditCase
from workbench.audit.evidence import EvidenceNotInReply, locate_quotes
from workbench.audit.judge import ContextUnit, judge_whole, verdict_validator
from workbench.audit.pipeline import AuditOptions
from workbench.audit.prompts import PROMPT_DIR
from workbench.graph import PolicyIndex
from workbench.vocabulary import EmptySeedPolicy, JudgeMode

ROOT = Path(__file__).resolve().parents[1]

REPLY = "I’m sorry!  I have issued   a full refund of $420. Anything else?"


def test_a_quote_is_found_with_the_replys_own_text_at_its_offsets():
    [span] = locate_quotes(REPLY, ["I have issued a full refund"])  # blanks differ
    assert REPLY[span["start"]:span["end"]] == span["quote"] == "I have issued   a full refund"
    [span] = locate_quotes(REPLY, ["i'm sorry!"])  # case and a typographic apostrophe
    assert span == {"start": 0, "end": 10, "quote": "I’m sorry!"}
    # An ellipsis joins two copied pieces: both are pointed at, in order.
    spans = locate_quotes(REPLY, ["I'm sorry! ... Anything else?"])
    assert [s["quote"] for s in spans] == ["I’m sorry!", "Anything else?"]


@pytest.mark.parametrize("quote", ["a partial refund", "refund of $42O", "ok", "", 7])
def test_a_quote_that_is_not_in_the_reply_is_refused(quote):
    with pytest.raises(EvidenceNotInReply):
        locate_quotes(REPLY, [quote])


def _units():
    return [ContextUnit("C1", "[C1] (forbidden)\n  Do: issue refunds over $300 without approval")]


def _case():
    return AuditCase(id="c", model_response=REPLY, session="s")


def test_a_made_up_quote_is_refused_retried_once_and_never_shown():
    answers = iter([
        {"violation": True, "violated_rules": ["C1"], "evidence": ["I refunded $999"],
         "reason": "Breaks [C1]."},
        {"violation": True, "violated_rules": ["C1"], "evidence": ["a full refund of $420"],
         "reason": "Breaks [C1]."},
    ])
    script = ScriptedTransport(lambda r: next(answers))
    judged = judge_whole(scripted_gateway(script), _case(), "[C1] ...", _units(), "judge:c")
    v = judged.verdict
    assert [e["quote"] for e in v.evidence] == ["a full refund of $420"]
    assert v.evidence_refused == 1
    retry = script.requests[1]["messages"]
    assert "I refunded $999" in retry[-1]["content"] and "not in the REPLY" in retry[-1]["content"]
    assert [c.step for c in judged.calls] == ["judge", "judge:evidence"]


def test_a_quote_still_not_in_the_reply_after_the_retry_is_dropped_and_counted():
    bad = {"violation": True, "violated_rules": ["C1"], "evidence": ["never said this"],
           "reason": "Breaks [C1]."}
    script = ScriptedTransport(lambda r: bad)
    v = judge_whole(scripted_gateway(script), _case(), "[C1] ...", _units(), "j").verdict
    assert v.violation and v.evidence == [] and v.evidence_refused == 2
    assert "never said this" not in str(v.evidence)


def test_stricter_verdict_checks():
    check = verdict_validator(["C1", "C2"], _case())
    with pytest.raises(ValueError, match="reason is empty"):
        check({"violation": False, "violated_rules": [], "evidence": [], "reason": "   "})
    with pytest.raises(ValueError, match="violated_rules is empty"):
        check({"violation": True, "violated_rules": [], "evidence": [], "reason": "bad"})
    with pytest.raises(ValueError, match="invalid citation"):
        check({"violation": True, "violated_rules": ["R12"], "evidence": [], "reason": "x [R12]"})
    ok = check({"violation": True, "violated_rules": ["C2"], "evidence": [], "reason": "[C2]"})
    assert ok.spans == [] and ok.refused == []


def test_no_judge_prompt_shows_an_example_id_a_model_could_cite_as_real():
    # The 1.5B judge cited v2's example "[R12]" as if it were a rule of the context.
    for name in ("judge_v3", "judge_checklist_v1", "judge_rule_v2"):
        text = (PROMPT_DIR / f"{name}.md").read_text(encoding="utf-8")
        body = text.split("-->", 1)[1]
        assert not re.findall(r"\[[A-Za-z]+-?\d+\]", body), name


def test_a_reply_about_nothing_in_the_policy_is_an_empty_seed_not_24_arbitrary_seeds():
    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures" / "demo" / "index.json"))
    skill = next(iter(index.index.skills))
    case = AuditCase(id="nonsense", model_response="zzqx wqpl", skills=[skill])
    opts = AuditOptions(judge_mode=JudgeMode.NONE)
    trace = audit_case(case, index, "cdg", None, opts)
    assert trace.error is not None and trace.error.kind == "EmptySeed"
    assert trace.context_tokens == 0 and not any(trace.seeds.values())
    # Without the floor the same case drew seeds from the SKILL's headings and description.
    loose = audit_case(case, index, "cdg", None, opts.with_context(relevance_floor=0.0))
    assert loose.error is None and sum(map(len, loose.seeds.values())) > 0
    # The first paper's EmptySeed per SKILL still applies on top of the floor.
    whole = audit_case(case, index, "cdg", None, opts.with_context(empty_seed=EmptySeedPolicy.ALL_RULES))
    assert whole.error is None and whole.fallback == EmptySeedPolicy.ALL_RULES
