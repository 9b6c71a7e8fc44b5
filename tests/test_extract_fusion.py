"""Rebasing block results into the graph, and fusion: condensed view, merges, cross edges."""

from __future__ import annotations

from workbench.extract.blocks import plan_blocks
from workbench.extract.fusion import GraphBuilder, apply_fusion, candidates, fusion_request
from workbench.extract.prompts import load_prompt
from workbench.extract.rebase import rebase_block
from workbench.extract.schema import BlockExtraction, LocalRule, validate_fusion
from workbench.graph import Edge, Rule, Span
from workbench.skill.document import parse_skill

SOURCE = (
    "---\nname: s\ndescription: d\n---\n# Refunds\n\n"
    "Refund to the original card. Never refund in cash.\nA supervisor approves big refunds.\n"
)


def block():
    return plan_blocks(parse_skill(SOURCE), 12_000)[0]


def test_rebase_locates_spans_in_the_source_and_prefixes_ids():
    ex = BlockExtraction(
        [LocalRule("R1", "Refund to the original card.", "refund", "use original card", "required"),
         LocalRule("R2", "Refunds are paid in gold.", "refund", "pay in gold", "permitted"),
         LocalRule("R3", "never refund in cash", "refund", "refund in cash", "prohibited"),
         LocalRule("R4", "Refund to the original card.", "refund", "use original card", "required")],
        [("R3", "R1"), ("R2", "R1"), ("R4", "R3")],
    )
    out = rebase_block(block(), ex)
    assert [r.id for r in out.rules] == ["refunds-R1", "refunds-R3"]
    assert [SOURCE[s.start:s.end] for r in out.rules for s in r.spans] == [
        "Refund to the original card.", "Never refund in cash"]
    assert (out.exact, out.normalised, out.duplicates, out.dropped_edges) == (2, 1, 1, 1)
    # R4 repeated R1 word for word: its edge now starts at R1.
    assert [(e.source, e.target) for e in out.edges] == [
        ("refunds-R3", "refunds-R1"), ("refunds-R1", "refunds-R3")]
    (err,) = out.span_errors
    assert (err.kind, err.block, err.local_id, err.quote) == (
        "source_span_error", "refunds", "R2", "Refunds are paid in gold.")


def rule(rid, cond, action, modality="required", span=(0, 5)):
    return Rule(rid, cond, action, modality, (Span(*span),))


def test_merge_unites_spans_repoints_edges_and_drops_loops():
    g = GraphBuilder()
    g.add_rules([rule("a-R1", "x", "y", span=(0, 5)), rule("a-R2", "x", "z", span=(10, 15))],
                [Edge("a-R2", "a-R1")])
    g.add_rules([rule("b-R1", "x", "y", span=(20, 25)), rule("b-R2", "q", "w", span=(30, 35))],
                [Edge("b-R2", "b-R1"), Edge("b-R1", "a-R2")])
    g.merge("b-R1", "a-R1")
    assert list(g.rules) == ["a-R1", "a-R2", "b-R2"]
    assert g.rules["a-R1"].spans == (Span(0, 5), Span(20, 25))
    assert {(e.source, e.target) for e in g.edges} == {("a-R2", "a-R1"), ("b-R2", "a-R1"), ("a-R1", "a-R2")}
    assert g.add_edge("b-R1", "a-R1") is False  # through the merge it is a self-loop
    assert len(g.graph().closure(["a-R1"])) == 2  # the cycle a-R1 <-> a-R2 is kept


def test_candidates_pick_related_known_rules_in_graph_order():
    known = [rule("k1", "customer asks refund", "check refund window"),
             rule("k2", "booking a flight", "ask for passenger names"),
             rule("k3", "refund requested twice", "payment window closes"),
             rule("k4", "any time", "be polite")]
    new = [rule("n1", "refund requested", "check payment window")]
    assert [r.id for r in candidates(known, new, max_known=5)] == ["k1", "k3"]
    assert [r.id for r in candidates(known, new, max_known=1)] == ["k3"]
    assert candidates(known, [rule("n2", "weather", "sunny skies")]) == []


def test_candidates_reach_rules_sharing_no_word_by_cue_or_meaning():
    """A prerequisite that shares no content word with the new rule: never shown by words
    alone; shown when a cue links it, or when an embedding finds it similar."""
    known = [rule("k1", "a final sale item", "means a discount of half or more"),
             rule("k2", "booking a flight", "ask for passenger names"),
             rule("k3", "customer is upset", "stay calm")]
    new = [rule("n1", "clearance goods", "no refund")]
    assert candidates(known, new) == []
    assert [r.id for r in candidates(known, new, cued={"k1"})] == ["k1"]

    def similarity(left, right):  # a stand-in for embeddings: k3 is "about" the new rule
        import numpy as np

        return np.array([[0.2], [0.1], [0.7]])

    assert [r.id for r in candidates(known, new, similarity=similarity)] == ["k3"]
    # Cued rules come first when the budget is short.
    assert [r.id for r in candidates(known, new, max_known=1, similarity=similarity, cued={"k1"})] == ["k1"]


def test_fuse_v2_shows_suggested_links_with_aliases():
    known, new = [rule("k1", "a", "b")], [rule("n1", "c", "d"), rule("n2", "e", "f")]
    request = fusion_request(load_prompt("fuse_v2"), "S", new, known,
                             [("n2", "k1", "uses 'a', defined here"), ("n1", "zz", "unknown")])
    user = request.messages[-1]["content"]
    assert "N2 -> K1 (uses 'a', defined here)" in user and "zz" not in user
    empty = fusion_request(load_prompt("fuse_v2"), "S", new, known)
    assert "SUGGESTED links:\n(none)" in empty.messages[-1]["content"]


def test_fusion_request_uses_aliases_and_answer_maps_back():
    known = [rule("refunds-R1", "refund requested", "check refund window")]
    new = [rule("gift-R1", "refund requested", "check refund window", span=(40, 45)),
           rule("gift-R2", "gift card refund", "check refund window first", "prohibited", (50, 55))]
    req = fusion_request(load_prompt("fuse_v1"), "Gift cards", new, known)
    user = req.messages[1]["content"]
    assert "K1 [required] if refund requested: check refund window" in user
    assert "N2 [prohibited]" in user and "refunds-R1" not in user
    g = GraphBuilder()
    g.add_rules(known, [])
    g.add_rules(new, [])
    answer = validate_fusion({"merges": [{"new": "N1", "known": "K1"}, {"new": "N2", "known": "K1"}],
                              "edges": [{"source": "N2", "target": "K1"}]}, ["N1", "N2"], ["K1"])
    outcome = apply_fusion(g, req, answer)
    assert outcome.merges == [{"rule": "gift-R1", "into": "refunds-R1"}]
    assert outcome.rejected == [{"rule": "gift-R2", "into": "refunds-R1", "reason": "modality differs"}]
    assert outcome.cross_edges == 1 and [(e.source, e.target) for e in g.edges] == [("gift-R2", "refunds-R1")]


def test_merges_of_unrelated_rules_are_refused():
    # As the embedded model did on the refund-desk SKILL: N2 -> K1 by position, not meaning.
    known = [rule("cancel-R2", "order status is shipped", "offer return", "prohibited")]
    new = [rule("refunds-R2", "refunding to a different card", "refund to the original payment method",
                "prohibited", (40, 45))]
    req = fusion_request(load_prompt("fuse_v1"), "Refunds", new, known)
    g = GraphBuilder()
    g.add_rules(known + new, [])
    answer = validate_fusion({"merges": [{"new": "N1", "known": "K1"}], "edges": []}, ["N1"], ["K1"])
    outcome = apply_fusion(g, req, answer)
    assert outcome.merges == [] and "too different (word overlap 0.00" in outcome.rejected[0]["reason"]
    assert len(g.rules) == 2
