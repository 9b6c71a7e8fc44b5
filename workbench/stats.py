"""Graph statistics and the complexity measure of the SkillCDG paper.

- coupling ``I_c = |E| / |R|``
- rule density ``I_d = T(rendered rules) / T(SKILL sources)``
- complexity ``C = I_d * I_c`` for any set of SKILLs (edges and rules summed over the set)
- maximum dependency depth: the longest path, counted in edges, after collapsing each strongly
  connected component to one node (so cycles do not make depth infinite).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from workbench.graph import RuleGraph, SkillGraph
from workbench.render import render_rules
from workbench.tokens import count_tokens


@dataclass(frozen=True)
class GraphStats:
    rules: int
    edges: int
    coupling: float
    max_depth: int
    has_cycle: bool
    rule_tokens: int
    source_tokens: int
    density: float
    complexity: float

    def as_dict(self) -> dict:
        return asdict(self)


def strongly_connected_components(graph: RuleGraph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (policies can chain thousands of rules deep)."""
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in graph.rules:
        if root in index_of:
            continue
        work = [(root, iter(graph.requires(root)))]
        index_of[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index_of:
                    index_of[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.requires(child))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index_of[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index_of[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                components.append(comp)
    return components


def depth_and_cycles(graph: RuleGraph) -> tuple[int, bool]:
    """(longest path in edges over the SCC condensation, whether any cycle exists)."""
    comps = strongly_connected_components(graph)
    comp_of = {rid: i for i, comp in enumerate(comps) for rid in comp}
    has_cycle = any(len(c) > 1 for c in comps)
    # Tarjan emits components in reverse topological order of the condensation: every
    # component a node requires is emitted before it, so one pass computes longest paths.
    longest = [0] * len(comps)
    for i, comp in enumerate(comps):
        best = 0
        for rid in comp:
            for tgt in graph.requires(rid):
                j = comp_of[tgt]
                if j != i:
                    best = max(best, longest[j] + 1)
        longest[i] = best
    return (max(longest) if longest else 0), has_cycle


def skill_stats(skills: SkillGraph | Iterable[SkillGraph]) -> GraphStats:
    """Statistics of one SKILL or of a set of SKILLs taken together."""
    group = [skills] if isinstance(skills, SkillGraph) else list(skills)
    n_rules = sum(len(s.graph) for s in group)
    n_edges = sum(len(s.graph.edges) for s in group)
    depth, cycle = 0, False
    for s in group:
        d, c = depth_and_cycles(s.graph)
        depth, cycle = max(depth, d), cycle or c
    rule_tokens = sum(count_tokens(render_rules(s, s.graph.rules)) for s in group)
    source_tokens = sum(count_tokens(s.source) for s in group)
    coupling = n_edges / n_rules if n_rules else 0.0
    density = rule_tokens / source_tokens if source_tokens else 0.0
    return GraphStats(
        rules=n_rules,
        edges=n_edges,
        coupling=coupling,
        max_depth=depth,
        has_cycle=cycle,
        rule_tokens=rule_tokens,
        source_tokens=source_tokens,
        density=density,
        complexity=density * coupling,
    )


def complexity(skills: Iterable[SkillGraph]) -> float:
    """``C = I_d * I_c`` of a set of SKILLs (e.g. those a case is associated with)."""
    return skill_stats(skills).complexity
