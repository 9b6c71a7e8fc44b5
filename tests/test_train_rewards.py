"""Rewards of the keyworder and GRPO group advantages, on hand-computed numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from workbench.audit import AuditIndex, load_cases
from workbench.audit.policy_context import PolicyContext
from workbench.graph import PolicyIndex
from workbench.train.rewards import (
    KeywordOutcome,
    coverage_reward,
    group_advantages,
    keyword_closure,
    parse_keywords,
    verified_reward,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"


@pytest.fixture(scope="module")
def merchant():
    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    cases = {c.id: c for c in load_cases(FIX / "merchant_cases.jsonl")}
    return index, cases


def always(value):
    calls = []

    def judge(case, context):
        calls.append(context)
        return value

    judge.calls = calls
    return judge


@pytest.mark.parametrize(
    "text",
    ["delay compensation", '{"keywords": "refund"}', '["refund"]', '{"keywords": []}',
     '{"keywords": [1, 2]}', '{"keywords": ["a", "b", "c", "d", "e"]}', "{not json"],
)
def test_unparsable_keywords_score_zero_without_calling_the_judge(merchant, text):
    index, cases = merchant
    case = cases["merchant-delay-violation"]
    judge = always(True)
    outcome = keyword_closure(case, text, index)
    assert outcome.keywords is None and outcome.error == "FormatInvalid"
    assert verified_reward(outcome, case, judge) == 0.0
    assert coverage_reward(outcome, ["C032"]) == 0.0
    assert judge.calls == []


def test_fenced_json_keywords_parse():
    assert parse_keywords('```json\n{"keywords": ["refund", " delay  tier "]}\n```') == [
        "refund", "delay tier"]


def test_empty_closure_scores_zero_even_with_a_right_judge(merchant):
    index, cases = merchant
    case = cases["merchant-delay-violation"]
    judge = always(True)
    outcome = keyword_closure(case, '{"keywords": ["zebra crossing"]}', index)
    assert outcome.valid and not outcome.closure_nonempty
    assert outcome.error == "EmptySeed"
    assert verified_reward(outcome, case, judge) == 0.0
    assert judge.calls == []


def test_reward_is_one_only_for_the_correct_verdict_on_a_valid_closure(merchant):
    index, cases = merchant
    violation, compliant = cases["merchant-delay-violation"], cases["merchant-delay-compliant"]
    outcome = keyword_closure(violation, '{"keywords": ["delay compensation"]}', index)
    assert outcome.closure_nonempty and "C032" in outcome.rules
    assert verified_reward(outcome, violation, always(True)) == 1.0
    assert verified_reward(outcome, violation, always(False)) == 0.0
    assert verified_reward(outcome, violation, always(None)) == 0.0
    ok = keyword_closure(compliant, '{"keywords": ["delay compensation"]}', index)
    assert verified_reward(ok, compliant, always(False)) == 1.0
    assert verified_reward(ok, compliant, always(True)) == 0.0
    # The judge sees the closure the keywords produced, not some other context.
    judge = always(True)
    verified_reward(outcome, violation, judge)
    assert judge.calls[0].text == outcome.context.text


def test_coverage_reward_by_hand():
    # gold {A, C}, closure {A, B}: coverage 1/2; 400 tokens at λ = 0.05 per 1000 cost 0.02.
    ctx = PolicyContext("x", 400, [])
    outcome = KeywordOutcome(["k"], ctx, "", ["A", "B"])
    assert coverage_reward(outcome, ["A", "C"], token_cost=0.05) == pytest.approx(0.48)
    assert coverage_reward(outcome, ["A"], token_cost=0.0) == 1.0
    with pytest.raises(ValueError, match="gold governing rules"):
        coverage_reward(outcome, [])


def test_coverage_reward_on_the_real_closure(merchant):
    index, cases = merchant
    case = cases["merchant-delay-violation"]
    outcome = keyword_closure(case, '{"keywords": ["delay compensation"]}', index)
    tokens = outcome.context.tokens
    assert coverage_reward(outcome, ["C032", "C050"], 0.1) == pytest.approx(1.0 - 0.1 * tokens / 1000)


def test_group_advantages_by_hand():
    # Group 1: mean 1, population std sqrt((4 + 1 + 1) / 3) = sqrt(2):
    #   (3 - 1)/sqrt(2) = 1.41421, (0 - 1)/sqrt(2) = -0.70711 (twice). Group 2: all equal -> 0.
    res = group_advantages([3, 0, 0, 0.5, 0.5, 0.5], group_size=3, eps=0.0)
    assert res.advantages == pytest.approx([math.sqrt(2), -1 / math.sqrt(2), -1 / math.sqrt(2), 0, 0, 0])
    assert (res.zero_groups, res.groups, res.zero_share) == (1, 2, 0.5)
    # With eps the scale shrinks slightly: 1 / (0.5 + 1e-4) = 1.99960.
    res = group_advantages([1, 0, 1, 0], group_size=4)
    assert res.advantages == pytest.approx([0.5 / 0.5001, -0.5 / 0.5001] * 2)
    assert res.zero_share == 0.0


def test_group_advantages_reject_bad_groups():
    with pytest.raises(ValueError, match="groups of 3"):
        group_advantages([1, 0], 3)
    with pytest.raises(ValueError, match="at least 2"):
        group_advantages([1], 1)
