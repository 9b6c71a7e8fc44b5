"""Edge provenance and proposals per version, and accept/reject verdicts kept per SKILL name."""

from __future__ import annotations

import pytest

from store import edge_decisions, repo
from store.db import make_engine
from workbench.graph import Edge, Rule, RuleGraph, SkillGraph, Span
from workbench.identity.roles import COMMAND_LINE, Actor

SOURCE = "Verify the id. Check the fare. Refund to the card."
ANN, BOB = Actor.signed_in("ann", "author"), Actor.signed_in("bob", "author")


def skill() -> SkillGraph:
    rules = [Rule(r, "always", r.lower(), "required", (Span(i * 15, i * 15 + 10),), "model", 0.9)
             for i, r in enumerate(("V", "F", "C"))]
    edges = [Edge("F", "V", provenance="procedure", confidence=0.9, evidence=Span(15, 20),
                  note="step 2 after 1")]
    proposed = [Edge("C", "F", provenance="continuation", confidence=0.3, note="follows")]
    return SkillGraph("desk", "", SOURCE, RuleGraph(rules, edges), proposed)


@pytest.fixture
def eng(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'review.db'}")
    yield engine
    engine.dispose()


def saved(eng) -> int:
    s = skill()
    v = repo.save_skill(eng, s, author="extract", actor=COMMAND_LINE).version
    edge_decisions.save_edge_trust(eng, "desk", v, s)
    return v


def test_provenance_and_proposals_round_trip_through_the_store(eng):
    v = saved(eng)
    back = edge_decisions.with_trust(eng, "desk", v, repo.load_skill(eng, "desk", v))
    (edge,) = back.graph.edges
    assert (edge.provenance, edge.confidence, edge.evidence, edge.note) == (
        "procedure", 0.9, Span(15, 20), "step 2 after 1")
    assert [e.pair for e in back.proposed] == [("C", "F")]
    assert {(r.provenance, r.confidence) for r in back.graph.rules.values()} == {("model", 0.9)}


def test_accepting_a_proposal_adds_an_author_edge_in_a_new_version(eng):
    v = saved(eng)
    v2 = edge_decisions.decide_edge(eng, "desk", v, ("C", "F"), accept=True, actor=ANN)
    assert v2 == v + 1
    after = edge_decisions.with_trust(eng, "desk", v2, repo.load_skill(eng, "desk", v2))
    added = {e.pair: e for e in after.graph.edges}[("C", "F")]
    assert added.provenance == "author" and added.confidence == 1.0 and after.proposed == []
    assert edge_decisions.load_edge_decisions(eng, "desk").accepted == {("C", "F")}


def test_rejecting_a_proposal_hides_it_everywhere_and_is_kept_for_re_extraction(eng):
    v = saved(eng)
    assert edge_decisions.decide_edge(eng, "desk", v, ("C", "F"), accept=False, actor=ANN) == v
    assert edge_decisions.with_trust(eng, "desk", v, repo.load_skill(eng, "desk", v)).proposed == []
    assert edge_decisions.load_edge_decisions(eng, "desk").rejected == {("C", "F")}
    # Rejecting a kept edge removes it in a new version.
    v2 = edge_decisions.decide_edge(eng, "desk", v, ("F", "V"), accept=False, actor=ANN)
    assert repo.load_skill(eng, "desk", v2).graph.edges == []
    # The latest verdict on a pair wins.
    edge_decisions.decide_edge(eng, "desk", v2, ("F", "V"), accept=True, actor=BOB)
    decisions = edge_decisions.load_edge_decisions(eng, "desk")
    assert ("F", "V") in decisions.accepted and ("F", "V") not in decisions.rejected


def test_a_verdict_on_an_unknown_rule_is_refused(eng):
    v = saved(eng)
    with pytest.raises(ValueError, match="no rule X"):
        edge_decisions.decide_edge(eng, "desk", v, ("X", "V"), accept=True, actor=ANN)


def test_a_version_saved_by_an_edit_keeps_provenance_and_marks_new_edges_author(eng):
    v = saved(eng)
    s = repo.load_skill(eng, "desk", v)
    edited = SkillGraph(s.name, s.description, s.source,
                        RuleGraph(s.graph.rules.values(), [*s.graph.edges, Edge("C", "V")]))
    # the page's save path
    v2 = repo.save_skill(eng, edited, author="ann", note="edit", actor=COMMAND_LINE).version
    back = edge_decisions.with_trust(eng, "desk", v2, repo.load_skill(eng, "desk", v2))
    assert {e.pair: e.provenance for e in back.graph.edges} == {("F", "V"): "procedure",
                                                                 ("C", "V"): "author"}
    assert [e.pair for e in back.proposed] == [("C", "F")]


def test_a_graph_changing_decision_on_an_old_version_is_refused_and_not_recorded(eng):
    # Accepting an edge saves a new version built on the one shown: from an old version that
    # would silently drop what later versions changed (the stale-save data loss of issue 16).
    v1 = saved(eng)
    v2 = edge_decisions.decide_edge(eng, "desk", v1, ("F", "V"), accept=False, actor=ANN)
    assert v2 == v1 + 1  # the procedure edge removed in v2
    with pytest.raises(repo.StaleVersion):
        edge_decisions.decide_edge(eng, "desk", v1, ("C", "F"), accept=True, actor=BOB)
    assert repo.versions(eng, "desk")[-1].version == v2
    assert ("C", "F") not in edge_decisions.load_edge_decisions(eng, "desk").accepted
