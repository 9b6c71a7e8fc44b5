"""Graph statistics and the complexity measure of the first paper (§3.2).

- coupling ``I_c = |E| / |R|``
- rule density ``I_d = T(R) / T(D)`` (Eq. 2): ``T(R)`` counts the tokens of the rules
  themselves, each rule's condition plus its action text, summed over rules; ``T(D)`` the
  tokens of the SKILL sources. Not the rendered context: ids, When/Then labels, verbatim
  quotes, ``Requires:`` lines and headers are template, and counting them made ``I_d`` depend
  on the template, exceed 1 and partly count edges. The tokenizer is a named choice
  (:data:`workbench.llm.tokens.TOKENIZERS`, cl100k by default) and every result names it.
- complexity ``C = I_d * I_c`` for any set of SKILLs (edges and rules summed over the set)
- maximum dependency depth: the longest path, counted in edges, after collapsing each strongly
  connected component to one node (so cycles do not make depth infinite).
- Table-9 corpus totals (:func:`corpus_totals`): depth is the *mean* over SKILLs and cycles
  the *number* of SKILL graphs with a cycle, as the first paper reports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from workbench.graph.rule_graph import RuleGraph, SkillGraph
from workbench.llm.tokens import DEFAULT_TOKENIZER, token_counter


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
    tokenizer: str = DEFAULT_TOKENIZER


@dataclass(frozen=True)
class CorpusTotals:
    """The totals row of Table 9 over a set of SKILLs: counts summed, depth averaged over
    SKILLs, cycles counted as SKILL graphs containing one; coupling, density and complexity
    pooled over the set (as :func:`skill_stats` of the set)."""

    skills: int
    rules: int
    edges: int
    coupling: float
    mean_depth: float
    skills_with_cycle: int
    rule_tokens: int
    source_tokens: int
    density: float
    complexity: float
    tokenizer: str = DEFAULT_TOKENIZER


def strongly_connected_components(graph: RuleGraph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (policies can chain thousands of rules deep)."""
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []

    def enter(node: str) -> None:
        index_of[node] = low[node] = len(index_of)  # numbered in visiting order
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(graph.requires(node))))

    for root in graph.rules:
        if root not in index_of:
            enter(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index_of:
                    enter(child)
                    break  # descend; node's remaining children are resumed later
                if child in on_stack:
                    low[node] = min(low[node], index_of[child])
            else:  # every child done: node is finished
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
        longest[i] = max((longest[comp_of[tgt]] + 1 for rid in comp for tgt in graph.requires(rid)
                          if comp_of[tgt] != i), default=0)
    return (max(longest) if longest else 0), has_cycle


def skill_stats(
    skills: SkillGraph | Iterable[SkillGraph], tokenizer: str = DEFAULT_TOKENIZER
) -> GraphStats:
    """Statistics of one SKILL or of a set of SKILLs taken together, token counts in
    ``tokenizer`` (a name from :data:`workbench.llm.tokens.TOKENIZERS`; ``ValueError`` otherwise).
    For a set, ``max_depth`` is the deepest SKILL and ``has_cycle`` whether any has one."""
    count = token_counter(tokenizer)
    group = [skills] if isinstance(skills, SkillGraph) else list(skills)
    n_rules = sum(len(s.graph) for s in group)
    n_edges = sum(len(s.graph.edges) for s in group)
    per_skill = [depth_and_cycles(s.graph) for s in group]
    depth, cycle = max((d for d, _ in per_skill), default=0), any(c for _, c in per_skill)
    # ``T`` of a rule: tokens of its condition plus tokens of its action.
    rule_tokens = sum(count(r.condition) + count(r.action) for s in group for r in s.graph.rules.values())
    source_tokens = sum(count(s.source) for s in group)
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
        tokenizer=tokenizer,
    )


def corpus_totals(skills: Iterable[SkillGraph], tokenizer: str = DEFAULT_TOKENIZER) -> CorpusTotals:
    """Table-9 totals of ``skills`` (see :class:`CorpusTotals`); an empty set gives zeros."""
    group = list(skills)
    pooled = skill_stats(group, tokenizer)
    per_skill = [depth_and_cycles(s.graph) for s in group]
    return CorpusTotals(
        skills=len(group),
        rules=pooled.rules,
        edges=pooled.edges,
        coupling=pooled.coupling,
        mean_depth=sum(d for d, _ in per_skill) / len(group) if group else 0.0,
        skills_with_cycle=sum(1 for _, c in per_skill if c),
        rule_tokens=pooled.rule_tokens,
        source_tokens=pooled.source_tokens,
        density=pooled.density,
        complexity=pooled.complexity,
        tokenizer=tokenizer,
    )


def complexity(skills: Iterable[SkillGraph], tokenizer: str = DEFAULT_TOKENIZER) -> float:
    """``C = I_d * I_c`` of a set of SKILLs (e.g. those a case is associated with)."""
    return skill_stats(skills, tokenizer).complexity
