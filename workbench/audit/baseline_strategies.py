"""The baselines' contexts, behind the same interface as ``cdg``: policy text that is not
rules. ``raw`` (RawSkill / Full-SKILL): the routed SKILL documents, verbatim; ``bm25`` and
``dense``: the best SKILL passages for the case by BM25 or all-MiniLM-L6-v2 similarity.
``lightrag`` and ``graphrag`` (the real libraries' retrieval over their index of each routed
SKILL, context only) belong to the research lab: ``workbench.audit.baselines.strategies``.

The retrieval baselines query with the last user message plus the reply (what a RAG system
has natively); they need no audit keywords. With a seed target
(``ContextOptions.effective_seed_target(fallback=False)``: ``--target-tokens``, capped by the
judge's room) they fill it instead of taking ``top_k`` passages or their library's own size.
"""

from __future__ import annotations

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
