"""Closure speed on a graph the size of the largest enterprise dataset in the SkillCDG paper
(3,467 rules, 1,737 require edges).

Prints the median time of ``RuleGraph.closure`` over many seed sets and the ratio to
``networkx.descendants`` (union over the same seeds, plus the seeds) measured in the same run.
Goal: ratio <= 1. Run: ``python bench/closure.py``.
"""

from __future__ import annotations

import random
import statistics
import time

import networkx as nx

from workbench.graph import Edge, Rule, RuleGraph

N_RULES, N_EDGES, N_SEED_SETS, REPEATS = 3467, 1737, 400, 5


def make_graph(seed: int = 7) -> tuple[RuleGraph, nx.DiGraph]:
    rnd = random.Random(seed)
    ids = [f"R{i:04d}" for i in range(N_RULES)]
    pairs: set[tuple[str, str]] = set()
    # Mostly "later rule requires earlier rule" (as in documents), some back edges for cycles.
    while len(pairs) < N_EDGES:
        a, b = rnd.randrange(N_RULES), rnd.randrange(N_RULES)
        if a == b:
            continue
        if a < b and rnd.random() > 0.05:
            a, b = b, a
        pairs.add((ids[a], ids[b]))
    graph = RuleGraph([Rule(i, "c", "a", "required") for i in ids], [Edge(a, b) for a, b in pairs])
    ref = nx.DiGraph()
    ref.add_nodes_from(ids)
    ref.add_edges_from(pairs)
    return graph, ref


def main() -> None:
    graph, ref = make_graph()
    rnd = random.Random(11)
    ids = list(graph.rules)
    seed_sets = [rnd.sample(ids, rnd.randint(1, 6)) for _ in range(N_SEED_SETS)]

    ours = graph.closure

    def theirs(seeds):
        out = set(seeds)
        for s in seeds:
            out |= nx.descendants(ref, s)
        return out

    for seeds in seed_sets[:50]:  # same answers before timing anything
        assert set(ours(seeds)) == theirs(seeds)

    def timed(fn) -> list[float]:
        samples = []
        for _ in range(REPEATS):
            for seeds in seed_sets:
                t0 = time.perf_counter()
                fn(seeds)
                samples.append(time.perf_counter() - t0)
        return samples

    # Interleave the two so machine noise hits both alike.
    a1, b1 = timed(ours), timed(theirs)
    a2, b2 = timed(ours), timed(theirs)
    med_ours = statistics.median(a1 + a2)
    med_nx = statistics.median(b1 + b2)
    sizes = [len(graph.closure(s)) for s in seed_sets]
    print(f"graph: {len(graph.rules)} rules, {len(graph.edges)} edges; "
          f"{len(seed_sets)} seed sets x {2 * REPEATS} repeats; "
          f"median closure size {statistics.median(sizes)}")
    print(f"closure median: {med_ours * 1e6:.1f} us")
    print(f"networkx.descendants median: {med_nx * 1e6:.1f} us")
    print(f"ratio closure/networkx: {med_ours / med_nx:.3f} (goal <= 1)")


if __name__ == "__main__":
    main()
