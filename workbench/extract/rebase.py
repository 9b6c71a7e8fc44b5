"""From a block's validated extraction to graph rules: locate spans, then rebase ids.

Local ids ``R1..Rn`` become ``<block key>-R<n>`` (``refunds-R3``): unique across the SKILL
because block keys are, readable, and stable while the block's text is unchanged. The local
number is kept (not renumbered after drops), so a span error's ``local_id`` names the gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.extract.blocks import PlannedBlock
from workbench.extract.report import SpanError
from workbench.extract.schema import BlockExtraction
from workbench.extract.spans import Located, locate, min_quote_ok
from workbench.graph import Edge, Rule, Span

EXACT_SPAN_CONFIDENCE = 0.9
NORMALISED_SPAN_CONFIDENCE = 0.7
OBLIGATION_CONFIDENCE = 0.6
# Measured before cues existed: 1 of 56 (airline) and 1 of 52 (retail) edges of the embedded
# model matched the hand-built demo graphs; a model edge alone is a guess until confirmed.
MODEL_EDGE_CONFIDENCE = 0.5


@dataclass
class RebasedBlock:
    rules: list[Rule] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    span_errors: list[SpanError] = field(default_factory=list)
    exact: int = 0
    normalised: int = 0
    dropped_edges: int = 0  # edges that touched a rule dropped for its span
    duplicates: int = 0  # rules repeated word for word within the block, folded into the first


def rule_id(block_key: str, local_id: str) -> str:
    return f"{block_key}-{local_id}"


def rebase_block(block: PlannedBlock, extraction: BlockExtraction) -> RebasedBlock:
    """Rules with spans as offsets into the SKILL source, and edges between them.

    A quote is searched in the piece its rule came from, then in the whole block (the model
    sometimes quotes a sentence of the heading context). A rule whose quote is not found is
    dropped and recorded as a ``source_span_error`` with the model's quote.
    """
    out = RebasedBlock()
    kept: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    pieces = extraction.pieces or [(0, len(block.text))]
    for r in extraction.rules:
        a, b = pieces[r.piece] if 0 <= r.piece < len(pieces) else (0, len(block.text))
        # A quote that is its whole piece (a sentence cut by sentences.py) is exact whatever its length.
        piece = block.text[a:b]
        if r.quote.strip() and piece.strip() == r.quote.strip():
            lead = len(piece) - len(piece.lstrip())
            found = Located(((lead, lead + len(r.quote.strip())),), "exact")
        else:
            found = locate(r.quote, piece)
        if found is None and (a, b) != (0, len(block.text)):
            found, a = locate(r.quote, block.text), 0
        if found is None:
            reason = (
                "quote not found in the block (exact or normalised)"
                if min_quote_ok(r.quote)
                else "quote too short to trace"
            )
            out.span_errors.append(
                SpanError(block.key, r.id, r.quote, r.condition, r.action, r.modality, reason)
            )
            continue
        if found.method == "exact":
            out.exact += 1
        else:
            out.normalised += 1
        spans = tuple(Span(block.start + a + s, block.start + a + e) for s, e in found.spans)
        signature = (r.condition.casefold(), r.action.casefold(), r.modality, spans)
        if signature in seen:  # a small model sometimes lists the same rule twice
            kept[r.id] = seen[signature]
            out.duplicates += 1
            continue
        rid = rule_id(block.key, r.id)
        seen[signature] = rid
        kept[r.id] = rid
        # A quote found word for word is better evidence the rule is in the text than one
        # found only after normalising whitespace and quotes.
        trust = EXACT_SPAN_CONFIDENCE if found.method == "exact" else NORMALISED_SPAN_CONFIDENCE
        if r.provenance != "model":  # the text's word against the model's verdict
            trust = OBLIGATION_CONFIDENCE
        out.rules.append(Rule(rid, r.condition, r.action, r.modality, spans, r.provenance, trust))
    pairs: set[tuple[str, str]] = set()
    for s, t in extraction.edges:
        if s not in kept or t not in kept:
            out.dropped_edges += 1
        elif kept[s] != kept[t] and (kept[s], kept[t]) not in pairs:
            pairs.add((kept[s], kept[t]))
            out.edges.append(Edge(kept[s], kept[t], provenance="model", confidence=MODEL_EDGE_CONFIDENCE))
    return out
