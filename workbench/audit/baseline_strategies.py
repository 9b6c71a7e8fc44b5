"""The baselines' contexts, behind the same interface as ``cdg``: policy text that is not
rules. ``raw`` (RawSkill / Full-SKILL): the routed SKILL documents, verbatim; ``bm25`` and
``dense``: the best SKILL passages for the case by BM25 or all-MiniLM-L6-v2 similarity;
``lightrag`` and ``graphrag``: the real libraries' retrieval over their index of each routed
SKILL (``audit/baselines``), context only.

The retrieval baselines query with the last user message plus the reply (what a RAG system
has natively); they need no audit keywords. With a seed target
(``ContextOptions.effective_seed_target(fallback=False)``: ``--target-tokens``, capped by the
judge's room) they fill it instead of taking ``top_k`` passages or their library's own size.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import replace

from workbench.audit.cases import AuditCase
from workbench.audit.judge import ContextUnit
from workbench.audit.passages import Passage, render_passages
from workbench.audit.policy_context import PolicyContext, check_budget
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import StrategyName


class RawStrategy:
    name = StrategyName.RAW
    uses_keywords = False
    uses_seed_target = False  # the whole document, whatever --target-tokens says

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        units = [ContextUnit(s, index.raw_text(s), s, ((0, len(index.skill(s).source)),)) for s in skills]
        text = "\n\n".join(u.text for u in units)
        return check_budget(PolicyContext(text, count_tokens(text), units), options)


def retrieval_query(case: AuditCase) -> str:
    return f"{case.last_user_message}\n{case.model_response}".strip()


class _RetrievalStrategy(ABC):
    """Passage retrieval baselines: subclasses rank passages for the case's query."""

    uses_keywords = False

    @abstractmethod
    def rank(self, query: str, skills, index, options) -> list[Passage]:
        """The top ``options.top_k`` passages of ``skills`` for ``query``, best first."""

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        target = options.effective_seed_target(fallback=False)
        if target is None:
            chosen = self.rank(retrieval_query(case), skills, index, options)
        else:
            # Matched budget: rank every passage, keep the best that fit the target.
            total = sum(len(index.passages(s, options.passage_tokens)) for s in skills)
            ranked = self.rank(retrieval_query(case), skills, index,
                               replace(options, top_k=max(total, 1)))
            chosen, used = [], 0
            for p in ranked:
                cost = count_tokens(render_passages([p])) + 1
                if used + cost <= target:
                    chosen.append(p)
                    used += cost
        text = render_passages(chosen)
        units = [ContextUnit(p.id, render_passages([p]), p.skill, ((p.start, p.end),)) for p in chosen]
        ctx = PolicyContext(text, count_tokens(text), units, passages=[p.id for p in chosen])
        return check_budget(ctx, options)


class Bm25Strategy(_RetrievalStrategy):
    name = StrategyName.BM25

    def rank(self, query, skills, index, options) -> list[Passage]:
        from workbench.audit.bm25 import BM25

        scored: list[tuple[float, int, int, Passage]] = []
        for si, s in enumerate(skills):
            passages = index.passages(s, options.passage_tokens)
            bm = index.memo(
                ("bm25", s, options.passage_tokens), lambda p=passages: BM25([x.text for x in p])
            )
            for i, score in bm.top(query, options.top_k):
                scored.append((score, si, i, passages[i]))
        scored.sort(key=lambda x: (-x[0], x[1], x[2]))
        return [p for *_, p in scored[: options.top_k]]


class DenseStrategy(_RetrievalStrategy):
    name = StrategyName.DENSE

    def __init__(self, encoder=None):
        self._encoder = encoder

    @property
    def encoder(self):
        if self._encoder is None:
            from workbench.audit.dense import default_encoder

            self._encoder = default_encoder()
        return self._encoder

    def rank(self, query, skills, index, options) -> list[Passage]:
        enc = self.encoder
        q = enc.encode([query])[0]
        scored: list[tuple[float, int, int, Passage]] = []
        for si, s in enumerate(skills):
            passages = index.passages(s, options.passage_tokens)
            if not passages:
                continue
            matrix = index.memo(
                ("dense", s, options.passage_tokens, id(enc)),
                lambda p=passages: enc.encode([x.text for x in p]),
            )
            sims = matrix @ q
            for i, score in enumerate(sims.tolist()):
                scored.append((score, si, i, passages[i]))
        scored.sort(key=lambda x: (-x[0], x[1], x[2]))
        return [p for *_, p in scored[: options.top_k]]


class _LibraryBaseline:
    """What the LightRAG and GraphRAG strategies share: a retriever over per-SKILL indexes
    that the audit's gateway builds on first use (``retriever`` None: made on first need;
    ``gateway`` None: one from the environment then). A subclass names its retriever class
    (imported on first need) and whether it queries with the audit keywords (``uses_keywords``)."""

    uses_keywords: bool
    uses_gateway = True  # indexing calls the model: get_strategy hands it the audit's gateway

    def __init__(self, retriever=None, gateway=None):
        self._retriever = retriever
        self._gateway = gateway
        self._made = threading.Lock()

    @property
    def retriever(self):
        # Under a lock: the runner's worker threads ask at the same time, and two retrievers
        # meant two index sets, each building the same SKILL's LightRAG index at once (the
        # race behind "Lock ... is bound to a different event loop" at --concurrency 2).
        with self._made:
            if self._retriever is None:
                kind = self._retriever_class()
                self._retriever = kind(kind.indexes_class(gateway=self._gateway))
            return self._retriever

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        # LightRAG queries with the audit keywords; GraphRAG embeds the query alone.
        by_keywords = (keywords,) if self.uses_keywords else ()
        text, units, chunks = self.retriever.context(
            retrieval_query(case), *by_keywords, skills, index,
            options.effective_seed_target(fallback=False))
        return check_budget(PolicyContext(text, count_tokens(text), units, passages=chunks),
                             options)


class LightragStrategy(_LibraryBaseline):
    """LightRAG's retrieval (entities, relations, chunks) for the case, context only.

    The index of each routed SKILL is built on first use through the audit's model gateway
    (role ``extractor``, the model that compiles CDGs) and cached under
    ``.workbench/baselines/lightrag``; the audit keywords are LightRAG's query keywords, so
    querying makes no model call. ``gateway`` None: one from the environment on first need.
    """

    name = StrategyName.LIGHTRAG
    uses_keywords = True

    @staticmethod
    def _retriever_class() -> type:
        from workbench.audit.baselines.lightrag_context import LightragRetriever

        return LightragRetriever

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        from workbench.audit.baselines.lightrag_presets import get_preset, paper_query

        # ``options.lightrag_preset``: "paper" queries with SKILL names + O + H + A and lets
        # LightRAG extract the keywords; the default queries with the audit keywords.
        preset = get_preset(options.lightrag_preset)
        query = paper_query(case, skills) if preset.query_with_case else retrieval_query(case)
        text, units, chunks = self.retriever.context(
            query, keywords, skills, index, options.effective_seed_target(fallback=False), preset)
        return check_budget(PolicyContext(text, count_tokens(text), units, passages=chunks),
                             options)


class GraphragStrategy(_LibraryBaseline):
    """GraphRAG's local-search context (reports, entities, relationships, text units) for the
    case, context only.

    The index of each routed SKILL is built on first use through the audit's model gateway
    (role ``extractor``) and cached under ``.workbench/baselines/graphrag``; local search
    embeds the retrieval query (the dense encoder), so querying makes no model call and needs
    no audit keywords. ``gateway`` None: one from the environment on first need.
    """

    name = StrategyName.GRAPHRAG
    uses_keywords = False

    @staticmethod
    def _retriever_class() -> type:
        from workbench.audit.baselines.graphrag_context import GraphragRetriever

        return GraphragRetriever

