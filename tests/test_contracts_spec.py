"""Contract files: valid ones load; invalid ones report every problem with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.contracts import ContractError, check_contract_text, load_contract, parse_contract

AIRLINE = Path(__file__).resolve().parents[1] / "fixtures" / "contracts" / "airline.yaml"

MINIMAL = """\
contract: minimal
phases:
  - id: only
    required: true
    admits:
      - assistant: any
"""


def issues_of(text: str) -> list[str]:
    contract, issues = check_contract_text(text, "c.yaml")
    assert contract is None
    return [str(i) for i in issues]


def test_minimal_contract_defaults():
    contract = parse_contract(MINIMAL)
    assert contract.name == "minimal" and contract.initial == "only"
    assert contract.required_phases == ("only",)
    assert contract.recovery_discount == 0.9
    assert contract.budgets.turns is None and contract.turn_shape.message_with_tool_call


def test_airline_contract_loads():
    contract = load_contract(AIRLINE)
    assert contract.name == "tau-airline"
    assert [p.id for p in contract.phases] == ["identify", "work", "propose", "confirmed", "commit"]
    assert contract.required_phases == ("identify",)
    assert contract.turn_shape.max_tool_calls == 1
    assert not contract.turn_shape.message_with_tool_call
    identified = contract.milestone("user_identified")
    assert identified.keyed and len(identified.evidence) == 2


def test_yaml_syntax_error_has_a_line():
    issues = issues_of("contract: x\nphases:\n  - id: a\n   admits: [\n")
    assert len(issues) == 1 and issues[0].startswith("line ")
    assert "fix the YAML syntax" in issues[0]


def test_unknown_key_is_located_and_lists_the_expected_keys():
    text = MINIMAL + "      - tol: lookup\n"
    issues = issues_of(text)
    assert any(i.startswith("line 7: phases[0].admits[1].tol: unknown key 'tol'") for i in issues)
    assert any("exactly one of 'tool', 'assistant' or 'user'" in i for i in issues)


def test_every_problem_is_reported_at_once():
    text = """\
contract: broken
budgets: {turns: 0}
recovery_discount: 1.5
phases:
  - id: a
    admits:
      - tool: lookup
        requires: [nope]
      - assistant: {pattern: '(unclosed'}
transitions:
  a: [b]
"""
    issues = issues_of(text)
    joined = "\n".join(issues)
    assert "line 2: budgets.turns: expected a whole number >= 1" in joined
    assert "line 3: recovery_discount: expected a number in (0, 1]" in joined
    assert "line 8: phases[0].admits[0].requires[0]: unknown milestone 'nope'" in joined
    assert "line 9: phases[0].admits[1].assistant.pattern: invalid regular expression" in joined
    assert "line 11: transitions.a[0]: unknown phase 'b'" in joined
    assert len(issues) == 5


def test_parse_contract_raises_with_source_and_lines():
    with pytest.raises(ContractError) as info:
        parse_contract("contract: x\nphases: []\n", source="mine.yaml")
    message = str(info.value)
    assert "mine.yaml:2: phases: a contract needs at least one phase" in message
    assert "workbench contract check" in message


def test_missing_name_and_duplicate_ids():
    text = """\
phases:
  - id: a
  - id: a
milestones:
  - {id: m, verified_by: {assistant: any}}
  - {id: m, verified_by: {assistant: any}}
"""
    joined = "\n".join(issues_of(text))
    assert "missing 'contract: NAME'" in joined
    assert "phase id 'a' is used twice" in joined
    assert "milestone id 'm' is used twice" in joined


def test_duplicate_yaml_key_is_reported():
    joined = "\n".join(issues_of(MINIMAL + "contract: again\n"))
    assert "line 7: key 'contract' appears twice" in joined


def test_keyed_requirement_needs_a_keyed_milestone():
    keyed_rule = "      - tool: refund\n        requires: ['m[order_id]']\n"
    text = MINIMAL.replace("      - assistant: any\n", keyed_rule)
    text += "milestones:\n  - {id: m, verified_by: {tool: lookup}}\n"
    joined = "\n".join(issues_of(text))
    assert "milestone 'm' has no 'key'" in joined


def test_tool_names_are_checked_against_the_tool_list():
    text = "tools: [lookup]\n" + MINIMAL.replace("assistant: any", "tool: lookpu")
    joined = "\n".join(issues_of(text))
    assert "tool 'lookpu' is not in 'tools'" in joined


def test_unreachable_phase_is_an_error():
    text = MINIMAL + "  - id: island\n    admits: [{assistant: any}]\n"
    joined = "\n".join(issues_of(text))
    assert "phase 'island' cannot be reached from 'only'; add a transition" in joined


def test_message_milestone_cannot_need_an_observation():
    text = MINIMAL + "milestones:\n  - {id: m, verified_by: {assistant: any}, observation: ok}\n"
    joined = "\n".join(issues_of(text))
    assert "messages have no observation" in joined


def test_observation_key_and_fields():
    text = MINIMAL + """\
milestones:
  - id: owner_known
    verified_by:
      - tool: read
        observation: {valid: ok, fields: {user_id: {from_user: true}}}
        key: observation.user_id
"""
    contract = parse_contract(text)
    evidence = contract.milestone("owner_known").evidence[0]
    assert evidence.key_from_observation and evidence.observation.fields[0].from_user


def test_mixed_keyed_and_unkeyed_evidence_is_an_error():
    text = MINIMAL + """\
milestones:
  - id: m
    verified_by:
      - {tool: a, key: x}
      - {tool: b}
"""
    assert any("either every verifying action has a 'key' or none" in i for i in issues_of(text))


def test_extension_keys_hold_anchors():
    text = "x-patterns:\n  - &yes '(?i)yes'\n" + MINIMAL.replace("assistant: any", "user: {pattern: *yes}")
    contract = parse_contract(text)
    assert contract.phases[0].admits[0].text.pattern.pattern == "(?i)yes"


def test_unreadable_file_is_a_contract_error(tmp_path):
    with pytest.raises(ContractError, match="cannot read the file"):
        load_contract(tmp_path / "missing.yaml")


def test_root_must_be_a_mapping():
    assert any("expected a mapping" in i for i in issues_of("- just\n- a list\n"))
