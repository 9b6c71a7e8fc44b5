from __future__ import annotations

import random

import networkx as nx
import pytest

from workbench.graph import Edge, PolicyIndex, Rule, RuleGraph, SkillGraph
from workbench.render import render_rules
from workbench.stats import depth_and_cycles, skill_stats, strongly_connected_components
from workbench.tokens import count_tokens


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
    assert st.rule_tokens == count_tokens(render_rules(skill, skill.graph.rules))
    assert st.source_tokens == count_tokens(skill.source)
    assert st.complexity == pytest.approx(st.density * 0.75)


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
