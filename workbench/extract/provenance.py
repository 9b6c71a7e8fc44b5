"""Cue candidates and an author's decisions applied to a fused graph, with provenance.

After fusion every edge carries where it came from. This step adds what the text itself says:

- a **direct** cue candidate (numbered-list order, a cross-reference to one section) becomes
  an edge with the cue's kind as provenance;
- an indirect candidate the model also proposed is **confirmed**: the edge keeps the cue's
  kind and evidence, with a higher confidence than either alone;
- any other candidate is a **proposal**: listed with the SKILL for an author to accept or
  reject, never used by the closure.

Decisions are keyed by ``(source, target)`` rule ids, which stay the same across
re-extraction while a block's text is unchanged: a rejected pair is removed (edge or proposal)
and never proposed again; an accepted pair is kept as an ``author`` edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.extract.cues import EdgeCandidate
from workbench.extract.fusion import GraphBuilder
from workbench.graph import Edge

CONFIRMED_BONUS = 0.3  # a cue and the model agreeing are worth more than either


@dataclass
class EdgeDecisions:
    """An author's verdicts on edges of one SKILL: pairs ``(source, target)``."""

    accepted: set[tuple[str, str]] = field(default_factory=set)
    rejected: set[tuple[str, str]] = field(default_factory=set)

    def decide(self, pair: tuple[str, str], accept: bool) -> None:
        (self.accepted if accept else self.rejected).add(pair)
        (self.rejected if accept else self.accepted).discard(pair)

    def to_dict(self) -> dict:
        return {"accepted": sorted(map(list, self.accepted)), "rejected": sorted(map(list, self.rejected))}


@dataclass
class CueOutcome:
    direct: int = 0
    confirmed: int = 0
    proposed: list[Edge] = field(default_factory=list)
    rejected_dropped: int = 0
    accepted_added: int = 0


def _edge(c: EdgeCandidate) -> Edge:
    return Edge(c.source, c.target, provenance=c.kind, confidence=round(c.confidence, 2),
                evidence=c.evidence, note=c.note)


def apply_cues(
    builder: GraphBuilder, found: list[EdgeCandidate], decisions: EdgeDecisions | None = None,
    propose_model_edges: bool = False,
) -> CueOutcome:
    """Add direct cues, confirm model edges a cue supports, collect the rest as proposals, then
    apply ``decisions``. Candidates name rule ids before merges; they are resolved here. With
    ``propose_model_edges``, an edge only the model found (no cue supports it) becomes a
    proposal too: for a model that cannot judge edges (see ``ExtractOptions.model_edges``)."""
    out = CueOutcome()
    decisions = decisions or EdgeDecisions()
    rejected = {(builder.resolve(s), builder.resolve(t)) for s, t in decisions.rejected}
    proposals: dict[tuple[str, str], Edge] = {}
    suppressed: set[tuple[str, str]] = set()
    for c in found:
        pair = (builder.resolve(c.source), builder.resolve(c.target))
        if pair in rejected:
            suppressed.add(pair)
        if pair[0] == pair[1] or pair in rejected:
            continue
        c = EdgeCandidate(pair[0], pair[1], c.kind, c.confidence, c.evidence, c.direct, c.note)
        if builder.has_edge(*pair):
            builder.restamp(*pair, provenance=c.kind, evidence=c.evidence, note=c.note,
                            confidence=round(min(1.0, c.confidence + CONFIRMED_BONUS), 2))
            out.confirmed += 1
        elif c.direct:
            out.direct += builder.add_edge(*pair, edge=_edge(c))
        elif pair not in proposals or c.confidence > (proposals[pair].confidence or 0):
            proposals[pair] = _edge(c)
    if propose_model_edges:
        alone = [e for e in builder.edges if e.provenance == "model"]
        builder.drop_edges_pairs(e.pair for e in alone)
        for e in alone:
            if e.pair not in rejected:
                proposals.setdefault(e.pair, e)
    out.rejected_dropped = len(suppressed | set(builder.drop_edges_pairs(decisions.rejected)))
    for s, t in sorted(decisions.accepted):
        pair = (builder.resolve(s), builder.resolve(t))
        if builder.has_edge(*pair):
            builder.restamp(*pair, provenance="author", confidence=1.0)
        elif builder.add_edge(*pair, edge=Edge(*pair, provenance="author", confidence=1.0,
                                                 evidence=getattr(proposals.get(pair), "evidence", None))):
            out.accepted_added += 1
        proposals.pop(pair, None)
    out.proposed = sorted(proposals.values(), key=lambda e: (-(e.confidence or 0), e.source, e.target))
    return out
