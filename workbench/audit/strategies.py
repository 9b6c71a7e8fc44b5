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
``baseline_strategies.py``; LightRAG and GraphRAG, part of the research lab, in
``workbench.audit.baselines.strategies``. This module is their registry: it names the lab's
two by module path (:class:`LabStrategy`), so the product imports no lab module
(``tests/test_product_lab.py``) and an install without the lab says how to get it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from workbench.audit.baseline_strategies import Bm25Strategy, DenseStrategy, RawStrategy
from workbench.audit.policy_context import Strategy
from workbench.audit.rule_strategies import CdgStrategy, NoClosureStrategy, NoKeywordsStrategy
from workbench.errors import WorkbenchError
from workbench.vocabulary import Render, Seeding, StrategyName

# Named context forms for the UI: the default, and the first version's keyword seeds with the
# full rendering (what the recorded judge exchanges in fixtures/recordings were made with).
CONTEXT_FORMS: dict[str, dict[str, str]] = {
    "scored seeds, compact rules": {},
    "keyword seeds, full rules (v1)": {"seeding": Seeding.KEYWORDS, "render": Render.FULL},
}

LAB_MODULE = "workbench.audit.baselines.strategies"
LAB_INSTALL = "pip install '.[lab]'"


class LabUnavailable(WorkbenchError, ValueError):
    """A lab strategy was asked for where the lab is not installed; the message says how."""


@dataclass(frozen=True)
class LabStrategy:
    """A strategy of the research lab, imported on first use by module path and class name."""

    name: str  # the strategy's name, as the lab's class has it
    cls: str
    uses_gateway: bool = True  # LightRAG and GraphRAG index each SKILL through the model

    def resolve(self) -> type:
        try:
            module = importlib.import_module(LAB_MODULE)
        except ImportError as exc:
            raise LabUnavailable(f"this strategy belongs to the research lab, which is not "
                                 f"installed here ({exc}); install it with {LAB_INSTALL}") from None
        return getattr(module, self.cls)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)


STRATEGIES: dict[str, type | LabStrategy] = {
    StrategyName.CDG: CdgStrategy,
    StrategyName.RAW: RawStrategy,
    StrategyName.BM25: Bm25Strategy,
    StrategyName.DENSE: DenseStrategy,
    StrategyName.NO_CLOSURE: NoClosureStrategy,
    StrategyName.NO_KEYWORDS: NoKeywordsStrategy,
    StrategyName.LIGHTRAG: LabStrategy(StrategyName.LIGHTRAG, "LightragStrategy"),
    StrategyName.GRAPHRAG: LabStrategy(StrategyName.GRAPHRAG, "GraphragStrategy"),
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
