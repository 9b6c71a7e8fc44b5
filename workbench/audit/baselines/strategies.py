"""The LightRAG and GraphRAG baselines as audit strategies (the research lab): the real
libraries' retrieval over their index of each routed SKILL, behind the same interface as
``cdg`` (``workbench.audit.strategies`` finds them here by name, so the product never imports
the lab). Like the retrieval baselines of ``workbench.audit.baseline_strategies`` they query
with the last user message plus the reply (LightRAG also with the audit keywords).
"""

from __future__ import annotations

import threading

from workbench.audit.baseline_strategies import retrieval_query
from workbench.audit.policy_context import PolicyContext, check_budget
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import StrategyName


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

