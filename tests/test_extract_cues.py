"""Edge candidates from the document itself: definitions, numbered procedures, cross-references,
heading nesting, continuations. Rules are placed on the text here (as the extractor's located
spans would be), so every expected candidate is derived from the SKILL below by hand."""

from __future__ import annotations

import pytest

from workbench.extract.cues import EdgeCandidate, defined_terms, find_candidates
from workbench.graph import Rule, Span
from workbench.skill.document import parse_skill

SKILL = """---
name: returns-desk
description: Returns and exchanges.
---

# Returns desk

## Definitions

- **Final sale item**: an item bought at a discount of 50% or more.
- **Premium member**: a customer with ten or more orders in the last year.

## Returns

A final sale item must never be accepted for return.
Premium members may return an item within 60 days of delivery.

## Exchange procedure

1. The agent must verify the order number with the customer.
2. The agent must check that every item is in its original packaging.
3. The agent must create the exchange with the `create_exchange` tool.
4. The agent must send the customer the prepaid label.

## Greeting

The agent must greet every customer by name and mention the order status.

## Escalation

A dispute about a final sale item must be escalated as described in Section 6.

## 6. Disputes

The agent must open a dispute ticket before promising any outcome.
"""

DOC = parse_skill(SKILL, "returns-desk/SKILL.md")


def rule(rid: str, sentence: str, condition: str = "always") -> Rule:
    start = SKILL.index(sentence)
    return Rule(rid, condition, sentence.lower(), "required", (Span(start, start + len(sentence)),))


RULES = [
    rule("D1", "**Final sale item**: an item bought at a discount of 50% or more."),
    rule("D2", "**Premium member**: a customer with ten or more orders in the last year."),
    rule("RT1", "A final sale item must never be accepted for return.", "a final sale item"),
    rule("RT2", "Premium members may return an item within 60 days of delivery.", "premium member"),
    rule("P1", "The agent must verify the order number with the customer."),
    rule("P2", "The agent must check that every item is in its original packaging."),
    rule("P3", "The agent must create the exchange with the `create_exchange` tool."),
    rule("P4", "The agent must send the customer the prepaid label."),
    rule("G1", "The agent must greet every customer by name and mention the order status."),
    rule("E1", "A dispute about a final sale item must be escalated as described in Section 6."),
    rule("X1", "The agent must open a dispute ticket before promising any outcome."),
]


def pairs(kind: str) -> set[tuple[str, str]]:
    return {(c.source, c.target) for c in find_candidates(DOC, RULES) if c.kind == kind}


def test_defined_terms_are_found_in_the_definitions_section():
    terms = {t for t, _, _ in defined_terms(DOC)}
    assert {"final sale item", "premium member"} <= terms


def test_every_defined_term_use_is_proposed():
    # RT1 and E1 use "final sale item" (E1 in another section), RT2 "premium members" (plural).
    assert pairs("definition") == {("RT1", "D1"), ("E1", "D1"), ("RT2", "D2")}


def test_every_step_requires_the_one_before_directly():
    steps = [c for c in find_candidates(DOC, RULES) if c.kind == "procedure"]
    assert {(c.source, c.target) for c in steps} == {("P2", "P1"), ("P3", "P2"), ("P4", "P3")}
    assert all(c.direct for c in steps)
    # The closure of the last step reaches every earlier step through the chain.
    from workbench.graph import Edge, RuleGraph

    graph = RuleGraph(RULES, [Edge(c.source, c.target) for c in steps])
    assert set(graph.closure(["P4"])) == {"P1", "P2", "P3", "P4"}


def test_a_cross_reference_resolving_to_one_section_is_direct():
    refs = [c for c in find_candidates(DOC, RULES) if c.kind == "cross-reference"]
    assert [(c.source, c.target, c.direct) for c in refs] == [("E1", "X1", True)]
    assert SKILL[refs[0].evidence.start : refs[0].evidence.end] == "as described in Section 6"


def test_no_candidate_crosses_unrelated_sections():
    # The greeting shares words ("customer", "order") with the procedure and the returns, but
    # nothing in the text links it: it must neither require nor be required by anything
    # except through its own section (where it is alone).
    for c in find_candidates(DOC, RULES):
        assert "G1" not in (c.source, c.target), c
    # Strong cues never link the procedure to the returns section.
    procedure, returns = {"P1", "P2", "P3", "P4"}, {"RT1", "RT2"}
    for c in find_candidates(DOC, RULES):
        assert not ({c.source, c.target} & procedure and {c.source, c.target} & returns), c


def test_numbered_headings_in_a_procedure_chain_phases():
    text = ("# Desk\n\n## Call procedure\n\n### Phase 1 - Greet\n\nThe agent must greet the caller.\n\n"
            "### Phase 2 - Verify\n\nThe agent must verify the account.\n\n"
            "### Phase 3 - Resolve\n\nThe agent must resolve the issue.\n"
            "The agent must log the call.\n")
    doc = parse_skill(text, "desk.md")
    rules = []
    for rid, sentence in (("A", "The agent must greet the caller."),
                          ("B", "The agent must verify the account."),
                          ("C", "The agent must resolve the issue."), ("D", "The agent must log the call.")):
        start = text.index(sentence)
        rules.append(Rule(rid, "always", sentence, "required", (Span(start, start + len(sentence)),)))
    direct = {(c.source, c.target) for c in find_candidates(doc, rules) if c.direct}
    assert direct == {("B", "A"), ("C", "B"), ("D", "B")}


def found_in(text: str, sentences: dict[str, str]) -> dict[tuple[str, str], EdgeCandidate]:
    """The candidates between rules placed on ``sentences`` of ``text``, by (source, target)."""
    rules = [Rule(rid, "always", s, "required", (Span(text.index(s), text.index(s) + len(s)),))
             for rid, s in sentences.items()]
    return {(c.source, c.target): c for c in find_candidates(parse_skill(text, "desk.md"), rules)}


def test_a_sequence_word_links_only_from_a_rules_opening_words():
    text = ("# Desk\n\n## Booking\n\nThe agent must first obtain the user id. "
            "The agent should then ask for the trip type. "
            "To transfer, the agent must call the transfer tool with a summary and then tell the user. "
            "A closed ticket cannot be reopened afterwards.\n")
    found = found_in(text, {
        "A": "The agent must first obtain the user id.",
        "B": "The agent should then ask for the trip type.",
        "C": "To transfer, the agent must call the transfer tool with a summary and then tell the user.",
        "D": "A closed ticket cannot be reopened afterwards.",
    })
    # "then" among B's opening words: B follows A, kept as an edge without asking a model.
    assert found[("B", "A")].kind == "procedure" and found[("B", "A")].direct
    # Later in the sentence the words order the rule's own clauses or effects: C and D are only
    # offered their predecessor, as any rule is.
    for pair in (("C", "B"), ("D", "C")):
        assert found[pair].kind == "continuation" and not found[pair].direct


def test_a_rule_opening_with_a_continuation_word_requires_the_one_before_directly():
    text = ("# Desk\n\n## Cabin\n\nCabin cannot be changed once a flight has been flown. "
            "Otherwise, any reservation can change cabin. Seats must be assigned by the tool.\n")
    found = found_in(text, {"A": "Cabin cannot be changed once a flight has been flown.",
                            "B": "Otherwise, any reservation can change cabin.",
                            "C": "Seats must be assigned by the tool."})
    assert found[("B", "A")].direct and found[("B", "A")].note == "opens with 'Otherwise'"
    assert not found[("C", "B")].direct


PHASES = ["The agent must greet the caller by name.", "The agent must verify the account number.",
          "The agent must restate the request.", "The agent must check the order date."]
WORDS = ("one", "two", "three", "four")
ORDINALS = ("", "Second, ", "Third, ", "Lastly, ")


@pytest.mark.parametrize("layout", [
    # (markup before the rule, the rule's own text, what follows) for phase n (1-based)
    lambda n, s: (f"**Phase {n} - part.** ", s, "\n\n"),  # a step per paragraph, not a heading
    lambda n, s: (f"Step {n}: ", s, "\n"),
    lambda n, s: (f"### Phase {WORDS[n - 1]}\n\n", s, "\n\n"),  # headings spelling the number out
    lambda n, s: ("", ORDINALS[n - 1] + (s if n == 1 else s[0].lower() + s[1:]), " "),  # ordinal openers
])
def test_every_layout_of_a_phased_procedure_chains_each_phase_to_the_one_before(layout):
    text, rules = "# Desk\n\n## Handling a call\n\n", []
    for n, sentence in enumerate(PHASES, 1):
        before, unit, after = layout(n, sentence)
        start = len(text) + len(before)
        rules.append(Rule(f"P{n}", "always", unit, "required", (Span(start, start + len(unit)),)))
        text += before + unit + after
    direct = {(c.source, c.target) for c in find_candidates(parse_skill(text, "desk.md"), rules) if c.direct}
    assert direct == {("P2", "P1"), ("P3", "P2"), ("P4", "P3")}


def test_a_numbered_phrase_inside_a_sentence_is_no_step():
    sentences = dict(zip("ABC", ("A bag over 23 kg must be checked in.",
                                 "Step 2 of the booking form must show the fee.", "Step 1 is optional."),
                         strict=True))
    found = found_in("# Desk\n\n## Bags\n\n" + " ".join(sentences.values()) + "\n", sentences)
    assert found and not [c for c in found.values() if c.direct]


def test_a_conditions_section_of_its_own_qualifies_only_the_rules_on_its_topic():
    text = ("# Desk\n\n## Handling a call\n\nThe agent must greet the caller by name. "
            "If the line test fails, the agent must book a technician visit.\n\n"
            "## Conditions\n\nTechnician visits can only be booked on weekdays. "
            "A visit window must be at least four hours.\n")
    sentences = {"G": "The agent must greet the caller by name.",
                 "B": "If the line test fails, the agent must book a technician visit.",
                 "W": "Technician visits can only be booked on weekdays.",
                 "H": "A visit window must be at least four hours."}
    found = [c for c in found_in(text, sentences).values() if c.kind == "heading"]
    # "technician" and "visit(s)" name the topic; one shared word ("visit") does not.
    assert [(c.source, c.target, c.direct) for c in found] == [("B", "W", False)]
    assert found[0].note == "'Conditions' qualifies rules on technician, visits"
