"""The version diff (issue 35 item 3): field by field, with provenance apart from meaning."""

from __future__ import annotations

from dataclasses import replace

from tests.test_store_index_io import full_index
from workbench.graph import Edge, PolicyIndex, RuleGraph, SkillGraph, Span
from workbench.graph.diff import describe, diff_skills


def _skill() -> SkillGraph:
    return PolicyIndex.from_dict(full_index())["desk"]


def test_equal_versions_have_no_changes():
    assert diff_skills(_skill(), _skill()).empty
    assert diff_skills(_skill(), _skill()).summary() == "no changes"


def test_every_rule_field_and_edge_change_is_named():
    old = _skill()
    rules = dict(old.graph.rules)
    rules["V"] = replace(rules["V"], spans=(Span(0, 6),), confidence=0.5)
    rules["F"] = replace(rules["F"], provenance="author")
    edges = [e for e in old.graph.edges if e.pair != ("C", "F")]
    edges[0] = replace(edges[0], note="renumbered")
    new = SkillGraph(old.name, "new words", old.source + "!", RuleGraph(rules.values(), edges),
                     [*old.proposed, Edge("V", "F", provenance="heading")])
    change = diff_skills(old, new)
    assert [(c.rule_id, c.fields) for c in change.rules_changed] == [
        ("V", ["spans", "confidence"]), ("F", ["provenance"])]
    assert [e.pair for e in change.edges_removed] == [("C", "F")]
    assert [(c.pair, [f.field for f in c.changes]) for c in change.edges_changed] == [
        (("F", "V"), ["note"])]
    assert change.summary() == (
        "edited rules V; removed edges C->F; changed provenance of rules F; changed provenance "
        "of edges F->V; new proposals V->F; changed the description; changed the source text")
    # A version that keeps no provenance of its own: only what the edit itself did.
    assert change.summary(with_trust=False) == (
        "edited rules V; removed edges C->F; changed the description; changed the source text")
    assert describe(change.rules_changed[0].changes[0].before) == "0–14"
    assert describe(None) == "—"


def test_a_proposal_that_became_an_edge_is_an_added_edge():
    old = _skill()
    accepted = Edge("C", "V", provenance="author", confidence=1.0)
    new = SkillGraph(old.name, old.description, old.source,
                     RuleGraph(old.graph.rules.values(), [*old.graph.edges, accepted]),
                     [e for e in old.proposed if e.pair != ("C", "V")])
    change = diff_skills(old, new)
    assert change.summary() == "added edges C->V"
    assert change.counts()["edges added"] == 1
