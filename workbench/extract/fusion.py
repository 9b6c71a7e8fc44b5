"""Cross-block fusion: the graph so far, its condensed view, and applying a fuser answer.

The fuser never sees the whole graph: :func:`candidates` picks the known rules a cue in the
text links to the new block's rules (always), then those most similar to them (embedding
similarity when a ``similarity`` is given, shared content words otherwise), at most
``max_known`` in all. So the prompt stays small whatever the SKILL's size, a prerequisite
that shares no word with the new rules can still be shown, and a rule unrelated to the new
block cannot change the request (which keeps stored fusion steps reusable after an edit
elsewhere).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.extract.prompts import Prompt
from workbench.extract.schema import FusionAnswer, fusion_schema
from workbench.graph import Edge, Rule, RuleGraph, Span

Similarity = Callable[[Sequence[str], Sequence[str]], Any]  # -> a matrix of values in [0, 1]
MIN_SIMILARITY = 0.5  # least embedding similarity for a known rule to be shown as related

_WORD = re.compile(r"[^\W\d_]{3,}")
MIN_MERGE_OVERLAP = 0.4
_STOP = frozenset(
    """the and for are but not you your any all can has have had was were with that this
    from they them their then than into when what which who will would should must may
    only also such each other its it's one more most some been being does did doing
    agent user users customer customers""".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in _STOP}


def rule_words(rule: Rule) -> set[str]:
    return content_words(f"{rule.condition} {rule.action}")


@dataclass
class GraphBuilder:
    """The rule graph under construction: rules in insertion order, ``require`` edges without
    self-loops or duplicates. Cycles are kept: policies do have mutual dependencies."""

    rules: dict[str, Rule] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    merged_into: dict[str, str] = field(default_factory=dict)  # merged rule id -> kept id
    _pairs: set[tuple[str, str]] = field(default_factory=set)

    def resolve(self, rule_id: str) -> str:
        while rule_id in self.merged_into:
            rule_id = self.merged_into[rule_id]
        return rule_id

    def add_rules(self, rules: list[Rule], edges: list[Edge]) -> None:
        for r in rules:
            if r.id in self.rules:
                raise ValueError(f"rule id {r.id!r} is already in the graph")
            self.rules[r.id] = r
        for e in edges:
            self.add_edge(e.source, e.target, edge=e)

    def add_edge(self, source: str, target: str, edge: Edge | None = None) -> bool:
        """Add ``source -> target`` (through merges) with ``edge``'s provenance, confidence and
        evidence; False if it is a self-loop or known."""
        s, t = self.resolve(source), self.resolve(target)
        if s == t or (s, t) in self._pairs or s not in self.rules or t not in self.rules:
            return False
        self._pairs.add((s, t))
        self.edges.append(replace(edge, source=s, target=t) if edge else Edge(s, t, provenance="model"))
        return True

    def has_edge(self, source: str, target: str) -> bool:
        return (self.resolve(source), self.resolve(target)) in self._pairs

    def restamp(self, source: str, target: str, **fields) -> None:
        """Change the provenance/confidence/evidence/note of a kept edge."""
        pair = (self.resolve(source), self.resolve(target))
        self.edges = [replace(e, **fields) if (e.source, e.target) == pair else e for e in self.edges]

    def drop_edges_pairs(self, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Remove these edges (through merges); the pairs that were there."""
        gone = {(self.resolve(s), self.resolve(t)) for s, t in pairs} & self._pairs
        self.edges = [e for e in self.edges if (e.source, e.target) not in gone]
        self._pairs -= gone
        return gone

    def merge(self, rule_id: str, into: str) -> None:
        """Fold ``rule_id`` into ``into``: spans united, edges re-pointed, loops dropped."""
        rule_id, into = self.resolve(rule_id), self.resolve(into)
        if rule_id == into:
            return
        gone, kept = self.rules.pop(rule_id), self.rules[into]
        spans = tuple(sorted(set(kept.spans) | set(gone.spans), key=lambda s: (s.start, s.end)))
        self.rules[into] = replace(kept, spans=_coalesce(spans))
        self.merged_into[rule_id] = into
        old, self.edges, self._pairs = self.edges, [], set()
        for e in old:
            self.add_edge(e.source, e.target, edge=e)

    def graph(self) -> RuleGraph:
        return RuleGraph(self.rules.values(), self.edges)


def _coalesce(spans: tuple[Span, ...]) -> tuple[Span, ...]:
    """Drop spans contained in another (two rules quoting the same sentence)."""
    out: list[Span] = []
    for s in spans:
        if out and s.start >= out[-1].start and s.end <= out[-1].end:
            continue
        out.append(s)
    return tuple(out)


def candidates(
    known: list[Rule], new: list[Rule], max_known: int = 12, min_shared: int = 1,
    similarity: Similarity | None = None, cued: Iterable[str] = (),
) -> list[Rule]:
    """The known rules most related to the new ones, in graph order.

    Known rules whose id is in ``cued`` (a cue in the text links them to a new rule) come
    first, whatever their words. The rest are scored by the most content words they share
    with any one new rule and, with ``similarity`` (texts -> matrix), by their best
    similarity to a new rule; a rule below both ``min_shared`` words and
    :data:`MIN_SIMILARITY` is left out (the fusion step is skipped when none is left). Ties
    keep graph order, so the choice is deterministic.
    """
    must = set(cued)
    new_words = [rule_words(r) for r in new]
    sims = None
    if similarity is not None and known and new:
        sims = similarity([_text(r) for r in known], [_text(r) for r in new])
    scored: list[tuple[int, float, int, int, Rule]] = []
    for pos, rule in enumerate(known):
        words = rule_words(rule)
        best = max((len(words & w) for w in new_words), default=0)
        sim = float(max(sims[pos])) if sims is not None else 0.0
        if rule.id in must or best >= min_shared or sim >= MIN_SIMILARITY:
            scored.append((0 if rule.id in must else 1, -sim, -best, pos, rule))
    chosen = sorted(scored, key=lambda t: t[:4])[:max_known]
    return [t[4] for t in sorted(chosen, key=lambda t: t[3])]


def _text(rule: Rule) -> str:
    return f"{rule.condition}: {rule.action}"


def _line(alias: str, rule: Rule) -> str:
    return f"{alias} [{rule.modality}] if {rule.condition}: {rule.action}"


@dataclass(frozen=True)
class FusionRequest:
    messages: list[dict[str, str]]
    schema: dict
    new_alias: dict[str, str]  # N1 -> rule id
    known_alias: dict[str, str]  # K1 -> rule id


def fusion_request(
    prompt: Prompt, section: str, new: list[Rule], known: list[Rule],
    suggested: Iterable[tuple[str, str, str]] = (),
) -> FusionRequest:
    """The fuser's messages and schema, with short aliases in place of rule ids (fewer tokens,
    and ids a small model copies reliably). ``suggested`` holds ``(source id, target id,
    why)`` cue candidates; they are shown when the prompt has a ``{{suggested}}`` slot and
    both rules are in the request."""
    new_alias = {f"N{i}": r.id for i, r in enumerate(new, 1)}
    known_alias = {f"K{i}": r.id for i, r in enumerate(known, 1)}
    values = {
        "section": section,
        "known": "\n".join(_line(a, r) for a, r in zip(known_alias, known, strict=True)),
        "new": "\n".join(_line(a, r) for a, r in zip(new_alias, new, strict=True)),
    }
    if "suggested" in prompt.placeholders():
        alias_of = {rid: a for a, rid in {**new_alias, **known_alias}.items()}
        lines = [f"{alias_of[s]} -> {alias_of[t]} ({why})" for s, t, why in suggested
                 if s in alias_of and t in alias_of]
        values["suggested"] = "\n".join(lines) or "(none)"
    messages = prompt.render(**values)
    schema = fusion_schema(list(new_alias), list(known_alias), max_edges=max(4, len(new)))
    return FusionRequest(messages, schema, new_alias, known_alias)


@dataclass
class FusionOutcome:
    merges: list[dict] = field(default_factory=list)  # {"rule", "into"}
    rejected: list[dict] = field(default_factory=list)  # {"rule", "into", "reason"}
    cross_edges: int = 0


def word_overlap(a: Rule, b: Rule) -> float:
    """Jaccard overlap of the content words of two rules' condition and action."""
    wa, wb = rule_words(a), rule_words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def apply_fusion(
    builder: GraphBuilder,
    request: FusionRequest,
    answer: FusionAnswer,
    min_overlap: float = MIN_MERGE_OVERLAP,
) -> FusionOutcome:
    """Apply a validated answer to the graph (which already holds the new block's rules).

    A merge is refused when the modalities differ (an obligation is never the same rule as
    a prohibition) or when the two rules share less than ``min_overlap`` of their words: a
    wrong merge deletes a rule, and small models propose merges by position rather than by
    meaning. Refused merges are reported, not applied.
    """
    out = FusionOutcome()
    for n, k in answer.merges.items():
        rule_id, into = request.new_alias[n], builder.resolve(request.known_alias[k])
        if rule_id not in builder.rules or into not in builder.rules:
            continue
        if builder.rules[rule_id].modality != builder.rules[into].modality:
            out.rejected.append({"rule": rule_id, "into": into, "reason": "modality differs"})
            continue
        overlap = word_overlap(builder.rules[rule_id], builder.rules[into])
        if overlap < min_overlap:
            out.rejected.append({"rule": rule_id, "into": into,
                                 "reason": f"too different (word overlap {overlap:.2f} < {min_overlap})"})
            continue
        builder.merge(rule_id, into)
        out.merges.append({"rule": rule_id, "into": into})
    aliases = {**request.new_alias, **request.known_alias}
    for s, t in answer.edges:
        if builder.add_edge(aliases[s], aliases[t], Edge(s, t, provenance="model", confidence=0.5)):
            out.cross_edges += 1
    return out
