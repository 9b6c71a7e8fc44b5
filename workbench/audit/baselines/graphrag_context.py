"""The GraphRAG baseline's judge context: what GraphRAG's local search retrieves, context only.

For each routed SKILL, GraphRAG's own local-search context builder (``get_local_search_engine``
with the library's default parameters) maps the case's query to entities by embedding, then
gathers their community reports, entities, relationships and source text units within a token
limit. We take that context before any generation: its reports/entities/relationships tables
as GraphRAG renders them form one unit per SKILL without spans (model-written), and each
source text unit is a citable unit with the span where it sits in the SKILL source, so gold
coverage by span works as for bm25/dense.

With a token target, each SKILL gets an equal share as GraphRAG's ``max_context_tokens``; as
GraphRAG counts with its own tokenizer and we add unit headers, the share is lowered until the
rendered context fits, and as a last resort the lowest-ranked units are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.audit.baselines.graphrag_index import GraphragIndexes, context_params, text_tables
from workbench.audit.baselines.index_store import locate
from workbench.audit.baselines.skill_indexes import IndexedRetriever
from workbench.audit.judge import ContextUnit
from workbench.llm.tokens import count_tokens

SOURCES = "-----Sources-----"
SHRINK_TRIES = 6


def kg_section(context_chunks: Any) -> str:
    """GraphRAG's rendered context without its Sources section (which becomes units)."""
    text = context_chunks if isinstance(context_chunks, str) else "\n\n".join(
        str(c) for c in context_chunks or [])
    at = text.find(SOURCES)
    return (text[:at] if at >= 0 else text).strip()


class GraphragRetriever(IndexedRetriever):
    """Builds the context text and units for a query over routed SKILLs (``indexes``: a
    :class:`GraphragIndexes`, made on first need when None)."""

    indexes_class = GraphragIndexes

    def skill_units(self, skill: str, source: str, query: str,
                    max_tokens: int | None) -> list[ContextUnit]:
        """One SKILL's units: its knowledge-graph unit (if any), then its source chunks in
        GraphRAG's order."""
        engine = self.indexes.open(skill, source)
        params = dict(engine.context_builder_params) if max_tokens is None else context_params(
            engine, max_tokens)
        result = engine.context_builder.build_context(query=query, **params)
        units = []
        kg = kg_section(result.context_chunks)
        if kg:
            units.append(ContextUnit(f"{skill}#graphrag-kg",
                                     f"[{skill}#graphrag-kg] (SKILL {skill}, GraphRAG local "
                                     f"search: reports, entities, relationships)\n{kg}", skill, ()))
        for i, row in enumerate(text_tables(result.context_records).get("sources", []), 1):
            content = str(row.get("text", "")).strip()
            if not content:
                continue
            span = locate(source, content)
            cid = f"{skill}#graphrag-{i}"
            units.append(ContextUnit(cid, f"[{cid}] (SKILL {skill}, GraphRAG text unit)\n{content}",
                                     skill, (span,) if span else ()))
        return units

    def context(self, query: str, skills: Sequence[str], index: Any,
                target_tokens: int | None = None) -> tuple[str, list[ContextUnit], list[str]]:
        """``(text, units, chunk ids)``: the rendered context and its citable units."""
        share = None if target_tokens is None else max(1, target_tokens // max(1, len(skills)))
        units: list[ContextUnit] = []
        for s in skills:
            source = index.skill(s).source
            got = self.skill_units(s, source, query, share)
            if share is not None:
                limit = share
                for _ in range(SHRINK_TRIES):
                    used = _size(got)
                    if used <= share:
                        break
                    limit = max(1, int(limit * share / used * 0.95))
                    got = self.skill_units(s, source, query, limit)
                got = _fit(got, share)
            units += got
        if target_tokens is not None:  # the separators between SKILLs count too
            units = _fit(units, target_tokens)
        text = "\n\n".join(u.text for u in units)
        chunk_ids = [u.id for u in units if not u.id.endswith("#graphrag-kg")]
        return text, units, chunk_ids


def _size(units: Sequence[ContextUnit]) -> int:
    return count_tokens("\n\n".join(u.text for u in units))


def _fit(units: list[ContextUnit], target: int) -> list[ContextUnit]:
    """Drop the last units (GraphRAG's lowest-ranked sources, then the graph unit) until the
    rendered units fit ``target``."""
    kept = list(units)
    while kept and _size(kept) > target:
        kept.pop()
    return kept
