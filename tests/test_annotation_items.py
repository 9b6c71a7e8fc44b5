"""Content-addressed item keys and locating pasted quotes in a SKILL source."""

from __future__ import annotations

import pytest

from workbench.annotation.items import (
    find_quote,
    locate_quote,
    reference_item,
    rule_item,
    rule_items,
)
from workbench.annotation.labels import LabelError
from workbench.graph import PolicyIndex, Rule, RuleGraph, SkillGraph, Span


@pytest.fixture
def skill(refund_index_data) -> SkillGraph:
    return PolicyIndex.from_dict(refund_index_data)["refunds"]


def with_rules(skill: SkillGraph, source: str, rules) -> SkillGraph:
    return SkillGraph(skill.name, skill.description, source, RuleGraph(rules))


def test_rule_keys_name_the_rule_and_are_stable(skill):
    key = rule_item(skill, "R3")
    assert key.startswith("refunds/R3@") and len(key.rpartition("@")[2]) == 10
    assert list(rule_items(skill).values()) == ["R1", "R2", "R3", "R4"]
    assert rule_item(skill, "R3") == key  # deterministic


def test_an_unchanged_rule_keeps_its_key_when_the_source_shifts(skill):
    # Text added before the spans moves every offset; the quoted text is the same.
    shifted_source = "Preamble.\n" + skill.source
    moved = [
        Rule(r.id, r.condition, r.action, r.modality,
             tuple(Span(s.start + 10, s.end + 10) for s in r.spans))
        for r in skill.graph.rules.values()
    ]
    shifted = with_rules(skill, shifted_source, moved)
    assert rule_items(shifted) == rule_items(skill)
    # ...but the reference inventory is tied to the exact source text.
    assert reference_item(shifted) != reference_item(skill)
    assert reference_item(skill).startswith("refunds@")


@pytest.mark.parametrize("field_name, value", [
    ("condition", "an order was refunded"),
    ("action", "refund twice"),
    ("modality", "permitted"),
])
def test_an_edited_rule_gets_a_new_key(skill, field_name, value):
    rule = skill.graph.rules["R3"]
    edited = Rule(**{**rule.__dict__, field_name: value})
    others = [r for r in skill.graph.rules.values() if r.id != "R3"]
    assert rule_item(with_rules(skill, skill.source, [*others, edited]), "R3") != rule_item(skill, "R3")


def test_find_quote_exact_then_whitespace_tolerant():
    source = "Refund the amount\n  paid. Refund the amount paid."
    # Offsets: "Refund the amount" is 17 chars, then "\n" and 2 spaces, "paid." ends at 25,
    # a space, and the second sentence starts at 26.
    # The exact text occurs once (the second); the first only matches loosely.
    assert find_quote(source, "Refund the amount paid") == [(26, 48)]
    # No exact match, so runs of whitespace match loosely: both copies are found.
    assert find_quote(source, "amount   paid.\n") == [(11, 25), (37, 49)]
    assert find_quote(source, "   ") == []
    assert find_quote(source, "not there") == []


def test_locate_quote_pieces_and_occurrences():
    source = "A must B. C must D. A must B."
    assert locate_quote(source, "A must B.", occurrence=2) == ((20, 29),)
    # Two pieces separated by a line of dots give two spans.
    assert locate_quote(source, "A must B.\n...\nC must D.") == ((0, 9), (10, 19))
    with pytest.raises(LabelError, match="occurs 2 time"):
        locate_quote(source, "A must B.", occurrence=3)
    with pytest.raises(LabelError, match="not in the SKILL source"):
        locate_quote(source, "E must F")
    with pytest.raises(LabelError, match="quote is empty"):
        locate_quote(source, " \n...\n ")
