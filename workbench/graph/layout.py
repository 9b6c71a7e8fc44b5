"""A layered layout of a rule graph that stays legible at any size (issue 35 item 4).

Rules that need others sit above their prerequisites: a rule's layer is the longest chain of
rules (among those drawn) that require it, so every ``require`` arrow points down. Within a
layer, rules are ordered by the mean position of the rules that require them (a few barycentre
sweeps, the usual way to cut crossings), and rules linked to nothing drawn go last, as a layer
of their own. The drawing (``components.rule_graph``) then wraps each layer into as many rows
as the screen's width needs, at a fixed, readable scale, instead of shrinking a 225-rule force
layout into unlabelled dots.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from workbench.graph.rule_graph import RuleGraph

SWEEPS = 4


@dataclass(frozen=True)
class Placement:
    layer: int  # 0 = top; the unlinked rules' layer is the last
    order: int  # position within the layer, left to right
    linked: bool  # False: no edge to another drawn rule


def layered(graph: RuleGraph, rule_ids: Iterable[str]) -> dict[str, Placement]:
    """The placement of each of ``rule_ids`` (unknown ids are left out), in their order."""
    ids = [r for r in dict.fromkeys(rule_ids) if r in graph.rules]
    shown = set(ids)
    down = {r: [t for t in graph.requires(r) if t in shown and t != r] for r in ids}
    up = {r: [s for s in graph.required_by(r) if s in shown and s != r] for r in ids}
    linked = [r for r in ids if down[r] or up[r]]
    layer = _longest_chain(linked, up, down)
    depth = max(layer.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    for r in linked:
        rows[layer[r]].append(r)
    _reduce_crossings(rows, up, down)
    out = {r: Placement(i, j, True) for i, row in enumerate(rows) for j, r in enumerate(row)}
    lonely = [r for r in ids if r not in out]
    out.update({r: Placement(depth, j, False) for j, r in enumerate(lonely)})
    return {r: out[r] for r in ids}


def _longest_chain(ids: list[str], up: dict[str, list[str]], down: dict[str, list[str]]) -> dict[str, int]:
    """Layer = longest path from a rule nobody (drawn) requires; an edge closing a cycle is
    ignored (found by a depth-first walk from the tops, then from whatever a cycle hides)."""
    order: list[str] = []  # a topological order of the acyclic part
    state: dict[str, int] = {}  # 1: on the walk's stack, 2: done
    back: set[tuple[str, str]] = set()
    starts = [r for r in ids if not up[r]] + ids
    for start in starts:
        if start in state:
            continue
        stack = [(start, iter(down[start]))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                order.append(node)
                stack.pop()
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(down[child])))
    layer = dict.fromkeys(ids, 0)
    for node in reversed(order):  # parents before children
        for child in down[node]:
            if (node, child) not in back:
                layer[child] = max(layer[child], layer[node] + 1)
    return layer


def _reduce_crossings(rows: list[list[str]], up: dict[str, list[str]],
                      down: dict[str, list[str]]) -> None:
    """Barycentre sweeps, down then up, in place; ties keep the earlier order (stable)."""
    def centre(r: str, pos: dict[str, int], neighbours: dict[str, list[str]]) -> float:
        near = [pos[n] for n in neighbours[r] if n in pos]
        return sum(near) / len(near) if near else pos[r]

    def sweep(indices: range, neighbours: dict[str, list[str]]) -> None:
        for i in indices:
            pos = {r: j for row in rows for j, r in enumerate(row)}
            rows[i].sort(key=lambda r, pos=pos: centre(r, pos, neighbours))

    for _ in range(SWEEPS):
        sweep(range(1, len(rows)), up)
        sweep(range(len(rows) - 2, -1, -1), down)
