"""Rules, ``require`` edges and the graphs they form: the plain data of the constraint
dependency graph, with no file format and no validation, and finding rules by text.

``workbench.graph.policy_index`` (the policy index and its ``skillcdg/1`` file) and
``workbench.graph.validation`` (which builds these from JSON) both import this module; it
imports neither, so the two are not a cycle. Outside the package, import these names from
``workbench.graph``, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from workbench.errors import WorkbenchError

# The graph's types: what ``workbench.graph`` re-exports.
__all__ = ["DECISIONS", "EDGE_TYPES", "FORMAT", "MODALITIES", "PROVENANCES", "Edge", "EdgeDecision",
           "IndexValidationError", "Problem", "Rule", "RuleGraph", "SkillGraph", "Span", "UnknownRule",
           "by_unique_key"]

FORMAT = "skillcdg/1"
MODALITIES = ("required", "prohibited", "permitted")
EDGE_TYPES = ("require",)
# Where a rule or edge came from: the extractor/fuser model, a cue in the SKILL text
# (workbench.extract.cues), a duty word the model overlooked (a rule's "obligation"), or a
# person's edit or review. Optional in the file format: a
# graph written before provenance existed reads as unknown ("").
PROVENANCES = ("model", "definition", "cross-reference", "procedure", "heading", "continuation",
               "author", "obligation")


@dataclass(frozen=True, order=True)
class Span:
    """Half-open character range ``[start, end)`` into a SKILL's source text."""

    start: int
    end: int


@dataclass(frozen=True)
class Rule:
    id: str
    condition: str
    action: str
    modality: str
    spans: tuple[Span, ...] = ()
    provenance: str = ""  # one of PROVENANCES, or "" when unknown
    confidence: float | None = None  # 0..1, how far the maker trusts it; None: not stated


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    type: str = "require"
    provenance: str = ""
    confidence: float | None = None
    evidence: Span | None = None  # the text that suggested the edge (a cue), if any
    note: str = ""  # why, in a few words ("uses 'final sale item', defined here")

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.target)


# An author's verdict on an edge (proposed or kept): what ``decisions`` in the file holds.
DECISIONS = ("accepted", "rejected")


@dataclass(frozen=True)
class EdgeDecision:
    """One verdict on the pair ``source -> target`` of a SKILL, by ``author`` at ``at`` (ISO
    8601, UTC; "" when unknown). Kept per SKILL name, not per version: a verdict outlives the
    version it was made on (re-extraction reads it), so it may name rules a version lacks."""

    source: str
    target: str
    decision: str  # one of DECISIONS
    author: str = ""
    at: str = ""

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.target)

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"


@dataclass(frozen=True)
class Problem:
    """One validation finding. ``location`` reads like a path: ``skills[2].rules[5].spans[0]``."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class IndexValidationError(WorkbenchError, ValueError):
    """A policy index failed validation; ``problems`` lists every finding with its location."""

    def __init__(self, problems: list[Problem], origin: str = "index"):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"{origin}: {len(problems)} problem(s) found; fix them and load again:\n{lines}"
        )


class UnknownRule(WorkbenchError, KeyError):
    def __init__(self, ids: Iterable[str], skill: str = ""):
        self.ids = sorted(set(ids))
        where = f" in SKILL {skill!r}" if skill else ""
        super().__init__(f"unknown rule id(s){where}: {', '.join(self.ids)}")

    def __str__(self) -> str:
        return self.args[0]


T = TypeVar("T")


def by_unique_key(items: Iterable[T], key: Callable[[T], str], what: str) -> dict[str, T]:
    """``items`` by ``key``, in order; ValueError ``duplicate <what> '<key>'`` on a repeat."""
    out: dict[str, T] = {}
    for item in items:
        k = key(item)
        if k in out:
            raise ValueError(f"duplicate {what} {k!r}")
        out[k] = item
    return out


class RuleGraph:
    """Rules in a stable order plus ``require`` edges, with adjacency built once for fast closure."""

    def __init__(self, rules: Iterable[Rule] = (), edges: Iterable[Edge] = ()):
        self.rules: dict[str, Rule] = by_unique_key(rules, lambda r: r.id, "rule id")
        self.edges: list[Edge] = []
        self._out: dict[str, list[str]] = {rid: [] for rid in self.rules}
        self._in: dict[str, list[str]] = {rid: [] for rid in self.rules}
        seen: set[tuple[str, str]] = set()
        for e in edges:
            if e.source not in self.rules or e.target not in self.rules:
                raise UnknownRule([x for x in (e.source, e.target) if x not in self.rules])
            if e.source == e.target or (e.source, e.target) in seen:
                continue
            seen.add((e.source, e.target))
            self.edges.append(e)
            self._out[e.source].append(e.target)
            self._in[e.target].append(e.source)

    def __len__(self) -> int:
        return len(self.rules)

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self.rules

    def requires(self, rule_id: str) -> list[str]:
        """Direct prerequisites of a rule."""
        return self._out[rule_id]

    def required_by(self, rule_id: str) -> list[str]:
        """Rules that directly require this one."""
        return self._in[rule_id]

    def closure(self, seeds: Iterable[str]) -> list[str]:
        """Seeds plus everything they transitively require, in discovery order (seeds first).

        Each rule is visited once, so cycles terminate and the cost is
        O(|closure| + |edges leaving it|). Raises ``UnknownRule`` for ids not in the graph.
        """
        return self._reach(seeds, self._out)

    def closure_paths(self, seeds: Iterable[str]) -> dict[str, list[str]]:
        """Why each rule is in ``closure(seeds)``: for every rule of the closure, in its order,
        the ``require`` path that brought it in, from a seed (first) to the rule (last), each
        rule requiring the next. A seed's path is itself. The path is the one the closure's
        breadth-first walk found first: a shortest one, a tie going to the earlier seed and
        then to the earlier edge, so the same graph and seeds always give the same paths.
        Raises ``UnknownRule`` like ``closure``."""
        parent: dict[str, str] = {}
        paths: dict[str, list[str]] = {}
        for rid in self._reach(seeds, self._out, parent):
            above = parent.get(rid)  # found before rid: its path is already there
            paths[rid] = [rid] if above is None else [*paths[above], rid]
        return paths

    def dependants(self, seeds: Iterable[str]) -> list[str]:
        """Seeds plus every rule that transitively requires one of them (reverse closure)."""
        return self._reach(seeds, self._in)

    def _reach(self, seeds: Iterable[str], adjacency: dict[str, list[str]],
               parent: dict[str, str] | None = None) -> list[str]:
        """Breadth-first from ``seeds``; ``parent`` (when given) gets, for each rule reached
        from another, the rule it was reached from."""
        seeds = list(seeds)  # walked twice on an unknown id: a generator would be spent
        order: list[str] = []
        seen: set[str] = set()
        for s in seeds:
            if s not in seen:
                if s not in adjacency:
                    raise UnknownRule([x for x in seeds if x not in adjacency])
                seen.add(s)
                order.append(s)
        # ``order`` doubles as the BFS queue: index i walks it while it grows.
        i = 0
        while i < len(order):
            for nxt in adjacency[order[i]]:
                if nxt not in seen:
                    seen.add(nxt)
                    order.append(nxt)
                    if parent is not None:
                        parent[nxt] = order[i]
            i += 1
        return order

    def subgraph(self, rule_ids: Iterable[str]) -> RuleGraph:
        keep = [rid for rid in rule_ids if rid in self.rules]
        keep_set = set(keep)
        return RuleGraph(
            (self.rules[r] for r in keep),
            (e for e in self.edges if e.source in keep_set and e.target in keep_set),
        )


@dataclass
class SkillGraph:
    """Upper layer (name, description: used for routing) plus the lower-layer rule graph."""

    name: str
    description: str
    source: str
    graph: RuleGraph = field(default_factory=RuleGraph)
    # Edges suggested (by a cue) but not confirmed: shown to the author to accept or reject,
    # never used by the closure.
    proposed: list[Edge] = field(default_factory=list)
    # Every verdict on this SKILL's edges, oldest first (the latest per pair wins).
    decisions: list[EdgeDecision] = field(default_factory=list)

    def span_text(self, span: Span) -> str:
        return self.source[span.start : span.end]

    def rule_text(self, rule_id: str) -> str:
        """The verbatim source text of a rule, spans joined with ' … '."""
        return " … ".join(self.span_text(s) for s in self.graph.rules[rule_id].spans)


def search_rules(skill: SkillGraph, query: str) -> list[str]:
    """Rule ids whose id, condition, action or source text contains every query word (the
    Graph page's search box)."""
    words = [w.lower() for w in query.split() if w]
    if not words:
        return list(skill.graph.rules)
    hays = {rid: f"{rid} {r.condition} {r.action} {skill.rule_text(rid)}".lower()
            for rid, r in skill.graph.rules.items()}
    return [rid for rid, hay in hays.items() if all(w in hay for w in words)]
