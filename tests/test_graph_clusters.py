"""workbench.graph.clusters: a big SKILL's whole graph by section, each collapsible (issue 44
item 6), and the drawing's data for it (components.rule_graph.condensed_data)."""

from __future__ import annotations

import pytest

from components.rule_graph import condensed_data
from workbench.graph.clusters import (
    UNPLACED,
    condense,
    section_id,
    section_label,
    section_title,
    sections,
)
from workbench.graph.rule_graph import Edge, Rule, RuleGraph, SkillGraph, Span

SOURCE = ("# Desk policy\nIntro line.\n"
          "## 1. Identity\nVerify the id.\n### 1.1 Step-up\nAsk twice.\n"
          "## 2. Refunds\nRefund to the card.\nNever cash.\n")


def _span(text: str) -> tuple[Span, ...]:
    start = SOURCE.index(text)
    return (Span(start, start + len(text)),)


@pytest.fixture
def skill() -> SkillGraph:
    rules = [Rule("P", "always", "introduce", "required", _span("Intro line.")),
             Rule("I", "always", "verify", "required", _span("Verify the id.")),
             Rule("S", "always", "ask twice", "required", _span("Ask twice.")),
             Rule("R", "a refund", "to the card", "required", _span("Refund to the card.")),
             Rule("N", "a refund", "never cash", "prohibited", _span("Never cash.")),
             Rule("E", "edited", "added by hand", "permitted")]
    edges = [Edge("R", "I"), Edge("N", "I"), Edge("N", "S"), Edge("S", "I"), Edge("R", "N"),
             Edge("E", "R", provenance="author")]
    return SkillGraph("desk", "", SOURCE, RuleGraph(rules, edges))


def test_rules_are_grouped_by_the_heading_above_them_at_level_two(skill):
    assert sections(skill) == {"Desk policy": ["P"], "1. Identity": ["I", "S"],
                               "2. Refunds": ["R", "N"], UNPLACED: ["E"]}
    # Level 3: the sub-section is a section of its own.
    assert sections(skill, level=3)["1.1 Step-up"] == ["S"]


def test_closed_sections_are_one_node_and_their_edges_merge_with_a_count(skill):
    groups = sections(skill)
    c = condense(skill, groups, ["2. Refunds"])
    ident, unplaced = section_id(1), section_id(3)
    assert set(c.graph.rules) == {section_id(0), ident, "R", "N", unplaced}
    assert c.members[ident] == ["I", "S"] and c.titles[ident] == "1. Identity"
    # R->I, N->I and N->S merge into two edges onto the Identity box: 1 + 2 rule edges.
    assert c.weights == {("R", ident): 1, ("N", ident): 2, ("R", "N"): 1, (unplaced, "R"): 1}
    assert c.opened == ("2. Refunds",)
    assert c.is_section(ident) and not c.is_section("R")


def test_an_edge_inside_a_closed_section_is_not_drawn_and_edges_can_be_filtered(skill):
    c = condense(skill, sections(skill), [])
    assert (section_id(1), section_id(1)) not in c.weights  # S->I inside Identity
    only_author = condense(skill, sections(skill), [],
                           rule_edges=[e for e in skill.graph.edges if e.provenance == "author"])
    assert only_author.weights == {(section_id(3), section_id(2)): 1}


def test_a_click_on_a_section_node_names_its_section_and_a_rule_does_not(skill):
    assert section_title(skill, section_id(2)) == "2. Refunds"
    for not_a_section in ("R", "§9", "§x", None, ""):
        assert section_title(skill, not_a_section) is None


def test_a_section_label_is_three_short_lines_with_the_count():
    assert section_label("2. Refunds", 1) == "§ 2. Refunds\n1 rule"
    long = section_label("11. Shipping Delays and Delivery Problems of every kind", 23)
    lines = long.split("\n")
    assert len(lines) == 3 and lines[-1] == "23 rules" and lines[1].endswith("…")
    assert max(len(line) for line in lines) <= 18


def test_the_drawing_data_marks_sections_and_weighs_merged_edges(skill):
    c = condense(skill, sections(skill), ["2. Refunds"])
    data = condensed_data(skill, c, selected="R", key="k")
    by_id = {n["id"]: n for n in data["nodes"]}
    assert by_id[section_id(1)]["section"] and by_id[section_id(1)]["label"].endswith("2 rules")
    assert by_id["R"]["selected"] and not by_id["N"].get("section")
    # A three-line box is taller than a rule's, and each box has its own width.
    assert by_id[section_id(1)]["h"] > by_id["R"]["h"]
    assert by_id[section_id(1)]["w"] > by_id["R"]["w"]
    widths = {(e["from"], e["to"]): e["width"] for e in data["edges"]}
    assert widths[("N", section_id(1))] > widths[("R", section_id(1))]
    titles = {(e["from"], e["to"]): e["title"] for e in data["edges"]}
    assert titles[("N", section_id(1))] == f"2 require edges from N to {section_id(1)}"
    assert titles[("R", "N")] == "R requires N"  # a real rule edge keeps its own words
