"""workbench.graph.selection: the Graph page's selected rule and the writes made on it, as
plain values (issue 44 item 1). Fast, no Streamlit."""

from __future__ import annotations

import pytest

from workbench.graph.rule_graph import Edge, Rule, RuleGraph
from workbench.graph.selection import (
    EdgeWrite,
    accept_pick,
    after_search,
    default_rule,
    select_options,
    shown_rule,
    write_key,
)


@pytest.fixture
def graph() -> RuleGraph:
    # C requires A and B; B requires A; A requires nothing. D stands alone.
    rules = [Rule(r, f"when {r}", f"do {r}", "required") for r in "ABCD"]
    return RuleGraph(rules, [Edge("C", "A"), Edge("C", "B"), Edge("B", "A")])


def test_the_default_is_the_rule_with_most_prerequisites_first_on_a_tie(graph):
    assert default_rule(graph, ["A", "B", "C", "D"]) == "C"  # 2 prerequisites
    assert default_rule(graph, ["A", "D"]) == "A"  # 0 and 0: the first
    assert default_rule(graph, []) is None


def test_the_chosen_rule_is_shown_even_when_the_search_no_longer_matches_it(graph):
    assert shown_rule(graph, "D", ["A", "B"]).rule == "D"
    assert shown_rule(graph, "D", ["A", "B"]).note is None


def test_a_rule_the_version_lacks_falls_back_with_a_note(graph):
    shown = shown_rule(graph, "GONE", ["A", "B", "C"])
    assert shown.rule == "C"
    assert shown.note == "Rule GONE is not in this version; showing C."
    assert shown_rule(graph, None, ["A", "B"]).note is None  # nothing chosen: nothing to say


def test_a_search_moves_the_selection_only_when_it_hides_it(graph):
    assert after_search(graph, "B", ["A", "B"]) == "B"
    assert after_search(graph, "D", ["A", "B"]) == "B"  # B has 1 prerequisite, A none
    assert after_search(graph, "D", []) == "D"  # nothing matches: keep it for later


def test_a_label_left_from_before_a_save_is_not_a_pick(graph):
    """The bug: the browser sent 'MOR-S006 — <old action>' after a save edited the action."""
    assert accept_pick(graph, "B") == "B"
    assert accept_pick(graph, "B — do B before the save") is None
    assert accept_pick(graph, None) is None
    assert accept_pick(graph, ("B", "A")) is None


def test_the_rule_box_always_holds_the_rule_shown():
    assert select_options("B", ["A", "B"]) == ["A", "B"]
    assert select_options("D", ["A", "B"]) == ["D", "A", "B"]


def test_an_edge_write_names_both_ends_on_its_button_and_in_its_note():
    add = EdgeWrite("add", "MOR-S006", "MOR-O008")
    assert add.label == "Add edge MOR-S006 → MOR-O008"
    assert add.note == "added edge MOR-S006 -> MOR-O008"
    assert add.complete
    pending = EdgeWrite("add", "MOR-S006", None)
    assert pending.label == "Add edge MOR-S006 → …" and not pending.complete
    assert EdgeWrite("remove", "A", "B").label == "Remove edge A → B"
    with pytest.raises(ValueError, match="unknown"):
        EdgeWrite("move", "A", "B")


def test_a_write_key_differs_for_another_rule_pair_or_version():
    """A press is read back by its key: another pair or version is another widget, so a
    press can only write what its button showed."""
    keys = {EdgeWrite("add", "A", "B").key("s", 1), EdgeWrite("add", "C", "B").key("s", 1),
            EdgeWrite("add", "A", "B").key("s", 2), EdgeWrite("remove", "A", "B").key("s", 1),
            EdgeWrite("add", "A", None).key("s", 1)}
    assert len(keys) == 5
    assert write_key("graph_rule_form", "s", 3, "A") == "graph_rule_form|s|3|A"
