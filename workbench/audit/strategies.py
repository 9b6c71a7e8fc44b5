"""Policy-access strategies: what policy text the judge sees for a case, by name.

Every strategy turns (case, keywords, routed SKILLs) into a
:class:`~workbench.audit.policy_context.PolicyContext` of citable units, rendered as one
text; the same judge and prompt skeleton then judge it, so every comparison is like for like.

============  ====================================================================
``cdg``       SkillCDG: seed rules, their transitive ``require`` closure, rendered
``no-closure``  ablation: the seed rules only
``no-keywords`` ablation: every rule of the routed SKILLs (no seeding)
``raw``       RawSkill / Full-SKILL: the routed SKILL documents, verbatim
``bm25``      BM25-RAG: the ``top_k`` SKILL passages by BM25 for the case text
``dense``     Dense-RAG: the ``top_k`` passages by all-MiniLM-L6-v2 cosine similarity
``lightrag``  LightRAG (the real library): its knowledge-graph index of each routed SKILL,
              queried with the audit keywords, context only (see ``audit/baselines``)
``graphrag``  Microsoft GraphRAG (the real library, an optional overlay): its local-search
              context over each routed SKILL's index, context only
============  ====================================================================

The options, the context and the seed target / judge's room are in ``policy_context.py``;
``cdg`` and its ablations in ``rule_strategies.py``; the baselines in
``baseline_strategies.py``. This module is their registry.
"""

from __future__ import annotations

from workbench.audit.baseline_strategies import (
    Bm25Strategy,
    DenseStrategy,
    GraphragStrategy,
    LightragStrategy,
    RawStrategy,
)
from workbench.audit.policy_context import Strategy
from workbench.audit.rule_strategies import CdgStrategy, NoClosureStrategy, NoKeywordsStrategy
from workbench.vocabulary import Render, Seeding, StrategyName

# Named context forms for the UI: the default, and the first version's keyword seeds with the
# full rendering (what the recorded judge exchanges in fixtures/recordings were made with).
CONTEXT_FORMS: dict[str, dict[str, str]] = {
    "scored seeds, compact rules": {},
    "keyword seeds, full rules (v1)": {"seeding": Seeding.KEYWORDS, "render": Render.FULL},
}

STRATEGIES: dict[str, type] = {
    StrategyName.CDG: CdgStrategy,
    StrategyName.RAW: RawStrategy,
    StrategyName.BM25: Bm25Strategy,
    StrategyName.DENSE: DenseStrategy,
    StrategyName.NO_CLOSURE: NoClosureStrategy,
    StrategyName.NO_KEYWORDS: NoKeywordsStrategy,
    StrategyName.LIGHTRAG: LightragStrategy,
    StrategyName.GRAPHRAG: GraphragStrategy,
}


def get_strategy(name: str, gateway=None) -> Strategy:
    """The strategy ``name``. ``gateway``: the audit's model gateway, handed to a strategy
    that calls the model itself (``uses_gateway``), so that its calls use the same
    configuration, cache, recording mode and usage log as the audit's own."""
    try:
        make = STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        ) from None
    return make(gateway=gateway) if gateway is not None and needs_gateway(name) else make()


def needs_gateway(name: str) -> bool:
    """Whether strategy ``name`` calls the model to build its contexts (even without a judge)."""
    return getattr(STRATEGIES.get(name), "uses_gateway", False)
