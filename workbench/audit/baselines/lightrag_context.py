"""The LightRAG baseline's judge context: what LightRAG retrieves for a case, context only.

Each routed SKILL's index (``lightrag_index``) is queried in LightRAG's keyword ("hybrid")
mode. Under the default preset the case's audit keywords are given as both its high- and
low-level keywords, so no per-query keyword model call is made; under the ``paper`` preset
(``lightrag_presets``) LightRAG's own keyword step extracts them from the query, and the
preset's limits (top_k, chunk_top_k, token cap) apply. Either way the query runs
with ``aquery_data``: the entities, relations and chunks LightRAG would put in its
``only_need_context`` prompt, before any generation. We render them in LightRAG's section
order (entities, relations, document chunks).

Chunks are verbatim slices of the SKILL source, so each becomes a citable unit with the span
where it sits in the source; gold coverage by span then works as for bm25/dense. The
knowledge-graph rows are model-written summaries: one unit per SKILL, without spans.

With a token target, items are taken in the order that keeps the policy text first: chunks
(LightRAG's rank), then relations, then entities, while they fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.audit.baselines.index_store import locate
from workbench.audit.baselines.lightrag_index import LightragIndexes
from workbench.audit.baselines.lightrag_presets import LightragPreset, get_preset
from workbench.audit.baselines.skill_indexes import IndexedRetriever
from workbench.audit.judge import ContextUnit
from workbench.llm.tokens import count_tokens

MODE = "hybrid"


def _entity_line(e: dict[str, Any]) -> str:
    return f"- {e.get('entity_name', '?')} ({e.get('entity_type', '?')}): {e.get('description', '')}"


def _relation_line(r: dict[str, Any]) -> str:
    return (f"- {r.get('src_id', '?')} -> {r.get('tgt_id', '?')} ({r.get('keywords', '')}): "
            f"{r.get('description', '')}")


class LightragRetriever(IndexedRetriever):
    """Builds the context text and units for a query over routed SKILLs (``indexes``: a
    :class:`LightragIndexes`, made on first need when None)."""

    indexes_class = LightragIndexes

    def retrieve(self, skill: str, source: str, query: str, keywords: Sequence[str],
                 preset: str | LightragPreset | None = None) -> dict:
        """LightRAG's retrieval data for one SKILL (entities, relationships, chunks)."""
        idx = self.indexes
        chosen = get_preset(preset)
        rag = idx.open(skill, source, chosen)
        words = [k for k in keywords if k.strip()] or query.split()[:6]
        param = idx.lib["QueryParam"](mode=MODE, only_need_context=True,
                                      **chosen.query_args(words))
        out = idx.run(rag.aquery_data(query, param))
        if not isinstance(out, dict) or out.get("status") != "success":
            # "no results" is a normal outcome of retrieval: an empty context for this SKILL.
            return {"entities": [], "relationships": [], "chunks": []}
        return out.get("data") or {}

    def context(self, query: str, keywords: Sequence[str], skills: Sequence[str], index: Any,
                target_tokens: int | None = None, preset: str | LightragPreset | None = None,
                ) -> tuple[str, list[ContextUnit], list[str]]:
        """``(text, units, chunk ids)``: the rendered context and its citable units."""
        chunks: list[ContextUnit] = []
        graph: dict[str, tuple[list[str], list[str]]] = {}
        for s in skills:
            source = index.skill(s).source
            data = self.retrieve(s, source, query, keywords, preset)
            ents = [_entity_line(e) for e in data.get("entities") or []]
            rels = [_relation_line(r) for r in data.get("relationships") or []]
            graph[s] = (ents, rels)
            for i, c in enumerate(data.get("chunks") or [], 1):
                content = str(c.get("content", "")).strip()
                span = locate(source, content)
                cid = f"{s}#lightrag-{i}"
                chunks.append(ContextUnit(cid, f"[{cid}] (SKILL {s}, LightRAG chunk)\n{content}",
                                          s, (span,) if span else ()))
        if target_tokens is not None:
            chunks, graph = _fit(chunks, graph, target_tokens)
        kg_units = []
        for s, (ents, rels) in graph.items():
            if not ents and not rels:
                continue
            body = [f"[{s}#lightrag-kg] (SKILL {s}, LightRAG knowledge graph)"]
            if ents:
                body += ["Entities:", *ents]
            if rels:
                body += ["Relations:", *rels]
            kg_units.append(ContextUnit(f"{s}#lightrag-kg", "\n".join(body), s, ()))
        units = [*kg_units, *chunks]
        return "\n\n".join(u.text for u in units), units, [c.id for c in chunks]


def _fit(chunks: list[ContextUnit], graph: dict[str, tuple[list[str], list[str]]], target: int):
    """Chunks first, then relations, then entities, each while the total stays in target
    (an item costs its tokens plus the separator's)."""
    used, kept = 0, []
    for c in chunks:
        cost = count_tokens(c.text) + 1
        if used + cost <= target:
            kept.append(c)
            used += cost
    out: dict[str, tuple[list[str], list[str]]] = {s: ([], []) for s in graph}
    for which in (1, 0):  # relations, then entities
        for s, rows in graph.items():
            for line in rows[which]:
                # a KG header is paid once per SKILL: its first row pays for it
                header = 0 if out[s][0] or out[s][1] else count_tokens(
                    f"[{s}#lightrag-kg] (SKILL {s}, LightRAG knowledge graph)\nEntities:\nRelations:") + 2
                cost = count_tokens(line) + 1 + header
                if used + cost <= target:
                    out[s][which].append(line)
                    used += cost
    return kept, out

