"""What every policy-access strategy shares: the options that shape a context, the context
it returns, and the error for a case with none (the strategies themselves are in
``rule_strategies.py``, ``baseline_strategies.py`` and, the lab's LightRAG and GraphRAG,
``baselines/strategies.py``, named in ``strategies.py``).

Two token figures size a context, under two names:

- the **seed target** (``ContextOptions.seed_target``, the ``--target-tokens`` flag): how
  many tokens of policy the context should aim at. It is SOFT: seeds are chosen so that
  their closure fits it, the retrieval baselines fill it with passages instead of taking
  ``top_k``. Without one, seeded strategies aim at the hard ``budget`` when one is set, else
  :data:`DEFAULT_SEED_TARGET`;
- the **judge's room** (``ContextOptions.judge_room``): what the judge's context window
  leaves for the policy (``workbench.audit.window.judge_room``, set by the pipeline). It
  only caps the seed target, for every strategy; a context still over it is judged in parts.

:meth:`ContextOptions.effective_seed_target` is the one place the two meet. The ``budget``
is a third thing, a HARD limit: a context over it is ``BudgetExceeded`` for every strategy
(nothing is truncated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from workbench.audit.cases import AuditCase
from workbench.audit.judge import ContextUnit
from workbench.audit.policy import AuditIndex
from workbench.audit.rule_ranking import DEFAULT_WEIGHTS, QueryWeights
from workbench.audit.seeds import DEFAULT_MAX_SEEDS
from workbench.errors import WorkbenchError
from workbench.vocabulary import EmptySeedPolicy, ErrorKind, LightragPresetName, Render, Seeding

# Without a seed target from the caller, seeds aim at this many context tokens (capped by
# the judge's room when it is known). It is absolute, not a share of the document, because
# what a judge needs is the governing rules and their closure, which do not grow with the
# policy (the length sweep shows it). Chosen from leave-one-intent-out cross-validation on
# CompliBench airlines (long SKILLs of ~10.1K tokens): held-out gold coverage passes 0.95
# between 10 % and 15 % of a SKILL (0.800 at ~1,010 tokens, 0.957 at ~1,520); 1,600 leaves a
# margin for domains whose workflows are longer.
DEFAULT_SEED_TARGET = 1600
RELEVANCE_FLOOR = 2.0


@dataclass(frozen=True)
class ContextOptions:
    max_seeds: int = DEFAULT_MAX_SEEDS  # seeding="keywords" only
    empty_seed: str = EmptySeedPolicy.ERROR
    budget: int | None = None  # HARD token limit of the rendered context: BudgetExceeded
    top_k: int = 6  # passages for bm25 / dense when no seed target is given
    passage_tokens: int = 200
    # The seeds' target (see the module doc): SOFT, set by the caller (``--target-tokens``).
    seed_target: int | None = None
    seeding: str = Seeding.SCORED
    render: str = Render.COMPACT  # rule rendering (see workbench.graph.render)
    weights: QueryWeights = DEFAULT_WEIGHTS
    # The judge's room (set by the pipeline from ``workbench.audit.window``): it only CAPS
    # the seed target. A 16K-token window must not turn the small default closure into a
    # 13K-token one — small, complete contexts are the point of SkillCDG — and a context
    # still over it is judged in parts by the pipeline.
    judge_room: int | None = None
    # Scored seeding: a SKILL whose best rule shares less than this BM25 relevance with the
    # case's own words gets no seeds (EmptySeed), instead of seeds drawn by its headings and
    # description alone. Chosen far below every real case seen: the lowest best-rule
    # relevance was 7.7 over 651 CompliBench airlines cases, 14.1 over the 21 demo cases and
    # 15.6 over the 4 merchant cases (a greeting "Hello, how can I help you today?" scores
    # 4.8-8.6 on the demo SKILLs); a reply sharing no word with any rule scores 0.
    relevance_floor: float = RELEVANCE_FLOOR
    # The lightrag strategy's settings: the project's defaults or the first paper's B.5
    # (workbench.audit.baselines.lightrag_presets); other strategies ignore it.
    lightrag_preset: str = LightragPresetName.DEFAULT

    def effective_seed_target(self, fallback: bool = True) -> int | None:
        """The token target a strategy's context aims at: ``seed_target``, else (with
        ``fallback``, as the seeded strategies need a number) the hard ``budget``, else
        :data:`DEFAULT_SEED_TARGET`; never above the judge's room (at least 1). Without
        ``fallback`` and without a ``seed_target``: None — the retrieval baselines then take
        ``top_k`` passages and the library baselines their own size."""
        want = self.seed_target
        if want is None and fallback:
            want = self.budget if self.budget is not None else DEFAULT_SEED_TARGET
        if want is None or self.judge_room is None:
            return want
        return max(1, min(want, self.judge_room))


@dataclass
class PolicyContext:
    text: str
    tokens: int
    units: list[ContextUnit]
    seeds: dict[str, list[str]] = field(default_factory=dict)
    seed_matches: dict[str, list[str]] = field(default_factory=dict)
    closure: dict[str, list[str]] = field(default_factory=dict)
    passages: list[str] = field(default_factory=list)
    fallback: str | None = None
    # SKILL -> rule -> the require path from the seed that brought the rule into context
    closure_paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)


class ContextUnavailable(WorkbenchError):
    """No context to judge (``EmptySeed``) or one over budget (``BudgetExceeded``).

    ``partial`` holds what was found before the stop (seeds, closure, token count), so the
    trace still shows it.
    """

    def __init__(self, kind: str, message: str, partial: PolicyContext):
        super().__init__(message)
        self.kind = kind
        self.partial = partial


class Strategy(Protocol):
    name: str
    uses_keywords: bool

    def build(
        self,
        case: AuditCase,
        keywords: Sequence[str],
        skills: Sequence[str],
        index: AuditIndex,
        options: ContextOptions,
    ) -> PolicyContext: ...


def check_budget(ctx: PolicyContext, options: ContextOptions) -> PolicyContext:
    """``ctx`` when it is within the hard ``budget``; ContextUnavailable (BudgetExceeded)
    otherwise — nothing is truncated."""
    if options.budget is not None and ctx.tokens > options.budget:
        n = len(ctx.units)
        raise ContextUnavailable(
            ErrorKind.BUDGET_EXCEEDED,
            f"the context of {n} item(s) renders to {ctx.tokens} tokens, over the budget of "
            f"{options.budget}; raise the budget or narrow the seeds (no truncation is done)",
            ctx,
        )
    return ctx
