"""Policy-access strategies: what policy text the judge sees for a case.

Every strategy turns (case, keywords, routed SKILLs) into a :class:`PolicyContext` of citable
units, rendered as one text; the same judge and prompt skeleton then judge it, so every
comparison is like for like.

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

Seeding (``ContextOptions.seeding``): ``scored`` (default) ranks every rule of the routed
SKILLs for the whole case (history, state, reply, keywords; see ``rule_ranking.py``) and takes
seeds while their closure fits the token target; ``keywords`` is the original conjunctive
keyword match capped at ``max_seeds`` (kept for comparisons and for recorded runs).

Token target: ``target_tokens`` is a SOFT target (seeds are chosen so the rendered context
fits it; the retrieval baselines fill it with passages instead of taking ``top_k``). Without
it, seeded strategies aim at ``budget`` when one is set, else ``default_target_tokens``.

The retrieval baselines query with the last user message plus the reply (what a RAG system
has natively); they need no audit keywords. A context over the token ``budget`` is
``BudgetExceeded`` for every strategy: nothing is truncated.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from workbench.audit.cases import AuditCase
from workbench.audit.judge import ContextUnit
from workbench.audit.passages import Passage, render_passages
from workbench.audit.policy import AuditIndex
from workbench.audit.rule_ranking import DEFAULT_WEIGHTS, QueryWeights, case_query, choose_seeds
from workbench.audit.seeds import DEFAULT_MAX_SEEDS, SeedResult, find_seeds
from workbench.errors import WorkbenchError
from workbench.graph.closure import BudgetExceeded, EmptySeed, closure_paths, select_closure
from workbench.graph.render import render_rule, render_rules
from workbench.tokens import count_tokens
from workbench.vocabulary import (
    EmptySeedPolicy,
    ErrorKind,
    LightragPresetName,
    Render,
    Seeding,
    StrategyName,
    values,
)

# "error": no seed in any routed SKILL is an EmptySeed outcome; "all-rules": then judge every
# rule of every routed SKILL; "per-skill" (the first paper's EmptySeed per SKILL): each routed
# SKILL without a seed contributes all of its rules, and is reported in ``fallback``.
EMPTY_SEED_POLICIES = values(EmptySeedPolicy)
SEEDING_METHODS = values(Seeding)
# Named context forms for the UI: the default, and the first version's keyword seeds with the
# full rendering (what the recorded judge exchanges in fixtures/recordings were made with).
CONTEXT_FORMS: dict[str, dict[str, str]] = {
    "scored seeds, compact rules": {},
    "keyword seeds, full rules (v1)": {"seeding": Seeding.KEYWORDS, "render": Render.FULL},
}
# Without a target from the caller (the judge's window, when known, should set one), seeds
# aim at this many context tokens. It is absolute, not a share of the document, because what
# a judge needs is the governing rules and their closure, which do not grow with the policy
# (the length sweep shows it). Chosen from leave-one-intent-out cross-validation on
# CompliBench airlines (long SKILLs of ~10.1K tokens): held-out gold coverage passes 0.95
# between 10 % and 15 % of a SKILL (0.800 at ~1,010 tokens, 0.957 at ~1,520); 1,600 leaves a
# margin for domains whose workflows are longer.
DEFAULT_TARGET_TOKENS = 1600
RELEVANCE_FLOOR = 2.0


@dataclass(frozen=True)
class ContextOptions:
    max_seeds: int = DEFAULT_MAX_SEEDS  # seeding="keywords" only
    empty_seed: str = EmptySeedPolicy.ERROR
    budget: int | None = None  # HARD token limit of the rendered context: BudgetExceeded
    top_k: int = 6  # passages for bm25 / dense when no target_tokens is given
    passage_tokens: int = 200
    # SOFT token target the rendered context should fit: seeds are chosen so their closure
    # fits it (and retrieval baselines fill it). Set by the caller, e.g. from the judge's window.
    target_tokens: int | None = None
    default_target_tokens: int = DEFAULT_TARGET_TOKENS  # when neither target nor budget is set
    seeding: str = Seeding.SCORED
    render: str = Render.COMPACT  # rule rendering (see workbench.render)
    weights: QueryWeights = DEFAULT_WEIGHTS
    # What the judge's context window leaves for the policy (set by the pipeline from
    # ``workbench.audit.window``): it only CAPS the seed target. A 16K-token window must not
    # turn the small default closure into a 13K-token one — small, complete contexts are the
    # point of SkillCDG — and a context still over it is judged in parts by the pipeline.
    room_tokens: int | None = None
    # Scored seeding: a SKILL whose best rule shares less than this BM25 relevance with the
    # case's own words gets no seeds (EmptySeed), instead of seeds drawn by its headings and
    # description alone. Chosen far below every real case seen: the lowest best-rule
    # relevance was 7.7 over 651 CompliBench airlines cases, 14.1 over the 21 demo cases and
    # 15.6 over the 4 merchant cases (a greeting "Hello, how can I help you today?" scores
    # 4.8-8.6 on the demo SKILLs); a reply sharing no word with any rule scores 0.
    relevance_floor: float = RELEVANCE_FLOOR
    # The lightrag strategy's settings: the project's defaults or the second paper's B.5
    # (workbench.audit.baselines.lightrag_presets); other strategies ignore it.
    lightrag_preset: str = LightragPresetName.DEFAULT

    def seed_target(self, index: AuditIndex, skills: Sequence[str]) -> int:
        """The token target seeding aims at for ``skills`` (see the module doc)."""
        if self.target_tokens is not None:
            want = self.target_tokens
        elif self.budget is not None:
            want = self.budget
        else:
            want = self.default_target_tokens
        return want if self.room_tokens is None else max(1, min(want, self.room_tokens))


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


def rule_units(
    index: AuditIndex, rules: dict[str, list[str]], style: str = "full"
) -> list[ContextUnit]:
    """Each rule of ``rules`` (SKILL -> ids) as a citable unit, rendered in ``style``."""
    return [ContextUnit(rid, render_rule(index.skill(name), rid, style), name,
                        tuple((sp.start, sp.end) for sp in index.skill(name).graph.rules[rid].spans))
            for name, ids in rules.items() for rid in ids]


def _check_budget(ctx: PolicyContext, options: ContextOptions) -> PolicyContext:
    if options.budget is not None and ctx.tokens > options.budget:
        n = len(ctx.units)
        raise ContextUnavailable(
            ErrorKind.BUDGET_EXCEEDED,
            f"the context of {n} item(s) renders to {ctx.tokens} tokens, over the budget of "
            f"{options.budget}; raise the budget or narrow the seeds (no truncation is done)",
            ctx,
        )
    return ctx


def render_rule_sets(index: AuditIndex, rules: dict[str, list[str]], style: str = "full") -> str:
    """``rules`` (SKILL -> ids) as one text, a ``render_rules`` block per SKILL."""
    return "\n\n".join(
        part for name, ids in rules.items()
        if (part := render_rules(index.skill(name), ids, style))
    )


def _scored_seeds(case, keywords, skills, index: AuditIndex, options, close: bool):
    query = case_query(case, keywords, options.weights)
    ranked = {s: index.ranked(s) for s in skills}
    chosen = choose_seeds(ranked, query, options.seed_target(index, skills), close=close,
                          relevance_floor=options.relevance_floor,
                          style=options.render, weights=options.weights)
    matches = {}
    best_first = sorted(query.rule, key=lambda t: -query.rule[t])
    for name, ids in chosen.seeds.items():
        rw = index.rule_words[name]
        for rid in ids:
            # What the trace shows as "matched by": the case words the rule shares, best first.
            own = rw.stems_of[rid]
            matches[f"{name}/{rid}"] = [t for t in best_first if t in own][:6]
    return SeedResult(chosen.seeds, matches), chosen.rules


def _render_ranked(index: AuditIndex, rules: dict[str, list[str]], style: str):
    """Text and units of rule sets (every SKILL with rules) from the blocks the index rendered
    once (the text ``render_rules`` gives: a header per SKILL, blocks joined as the style joins them)."""
    parts, units = [], []
    sep = "\n" if style == Render.COMPACT else "\n\n"
    for name, ids in rules.items():
        ranked = index.ranked(name)
        blocks = ranked.blocks(style)
        parts.append(f"## SKILL: {name}\n\n" + sep.join(blocks[r] for r in ids))
        graph_rules = ranked.skill.graph.rules
        units += [ContextUnit(r, blocks[r], name,
                              tuple((sp.start, sp.end) for sp in graph_rules[r].spans))
                  for r in ids]
    text = "\n\n".join(parts)
    return text, units


class _SeededStrategy:
    uses_keywords = True
    close = True

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        if options.seeding not in SEEDING_METHODS:
            raise ValueError(f"unknown seeding {options.seeding!r}; choose one of "
                             f"{', '.join(SEEDING_METHODS)}")
        if options.empty_seed not in EMPTY_SEED_POLICIES:
            raise ValueError(f"unknown empty-seed policy {options.empty_seed!r}; choose one of "
                             f"{', '.join(EMPTY_SEED_POLICIES)}")
        style = options.render
        closed = None
        if options.seeding == Seeding.SCORED:
            found, closed = _scored_seeds(case, keywords, skills, index, options, self.close)
        else:
            found = find_seeds(index, skills, keywords, options.max_seeds)
        seeds = {s: ids for s, ids in found.seeds.items() if ids}
        fallback = None
        unseeded = [s for s in skills if s not in seeds]
        if seeds and unseeded and options.empty_seed == EmptySeedPolicy.PER_SKILL:
            # EmptySeed per SKILL: a routed SKILL nothing matched is judged whole, not dropped.
            for s in unseeded:
                seeds[s] = list(index.skill(s).graph.rules)
            seeds = {s: seeds[s] for s in skills}
            fallback = f"{EmptySeedPolicy.PER_SKILL}:" + ",".join(unseeded)
        if not seeds:
            if options.empty_seed == EmptySeedPolicy.ERROR:
                raise ContextUnavailable(
                    EmptySeed(list(skills)).kind,
                    f"no rule of {', '.join(skills)} matches "
                    + ("the case's words" if options.seeding == Seeding.SCORED
                       else f"the keywords {list(keywords)!r}")
                    + "; nothing to judge against (use --empty-seed all-rules to judge every rule, "
                    "or --keywords llm)",
                    PolicyContext("", 0, [], {s: [] for s in skills}),
                )
            seeds = {s: list(index.skill(s).graph.rules) for s in skills}
            fallback = EmptySeedPolicy.ALL_RULES
        if closed is not None and fallback is None:
            rules = {s: ids for s, ids in closed.items() if ids}
            text, units = _render_ranked(index, rules, style)
            ctx = PolicyContext(text, count_tokens(text), units, seeds, found.matches, rules,
                                closure_paths=_paths_of(index, seeds, rules))
            return _check_budget(ctx, options)
        if self.close and fallback != EmptySeedPolicy.ALL_RULES:
            outcome = select_closure(index.index, seeds, options.budget, style)
            if isinstance(outcome, BudgetExceeded):
                raise ContextUnavailable(
                    ErrorKind.BUDGET_EXCEEDED,
                    outcome.message,
                    PolicyContext(
                        "", outcome.tokens, [], seeds, found.matches, outcome.rules,
                        closure_paths=outcome.paths,
                    ),
                )
            assert not isinstance(outcome, EmptySeed)
            rules, text, tokens = outcome.rules, outcome.text, outcome.tokens
            paths = outcome.paths
        else:
            rules = seeds
            text = render_rule_sets(index, rules, style)
            tokens = count_tokens(text)
            # No closure (the ablation, or every rule after an empty seed): each rule is in
            # context as a seed of its own.
            paths = {s: {rid: [rid] for rid in ids} for s, ids in rules.items()}
        ctx = PolicyContext(
            text, tokens, rule_units(index, rules, style), seeds, found.matches, rules,
            fallback=fallback, closure_paths=paths,
        )
        return _check_budget(ctx, options)


def _paths_of(index: AuditIndex, seeds: dict[str, list[str]], rules: dict[str, list[str]]
              ) -> dict[str, dict[str, list[str]]]:
    """The require path of every rule of ``rules`` from ``seeds`` (scored seeding closes the
    seeds it chose while choosing them; the paths are walked here, in ``rules``' order). A
    rule no seed reaches keeps a path of its own (it cannot happen for a closure, but the
    trace must never claim a path that is not in the graph)."""
    walked = closure_paths(index.index, {s: seeds.get(s, []) for s in rules})
    return {s: {rid: walked.get(s, {}).get(rid, [rid]) for rid in ids} for s, ids in rules.items()}


class CdgStrategy(_SeededStrategy):
    name = StrategyName.CDG


class NoClosureStrategy(_SeededStrategy):
    name = StrategyName.NO_CLOSURE
    close = False


class NoKeywordsStrategy:
    name = StrategyName.NO_KEYWORDS
    uses_keywords = False

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        rules = {s: list(index.skill(s).graph.rules) for s in skills}
        text = render_rule_sets(index, rules, options.render)
        ctx = PolicyContext(text, count_tokens(text), rule_units(index, rules, options.render),
                            closure=rules)
        return _check_budget(ctx, options)


class RawStrategy:
    name = StrategyName.RAW
    uses_keywords = False

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        units = [ContextUnit(s, index.raw_text(s), s, ((0, len(index.skill(s).source)),)) for s in skills]
        text = "\n\n".join(u.text for u in units)
        return _check_budget(PolicyContext(text, count_tokens(text), units), options)


def retrieval_query(case: AuditCase) -> str:
    return f"{case.last_user_message}\n{case.model_response}".strip()


class _RetrievalStrategy(ABC):
    """Passage retrieval baselines: subclasses rank passages for the case's query."""

    uses_keywords = False

    @abstractmethod
    def rank(self, query: str, skills, index, options) -> list[Passage]:
        """The top ``options.top_k`` passages of ``skills`` for ``query``, best first."""

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        if options.target_tokens is None:
            chosen = self.rank(retrieval_query(case), skills, index, options)
        else:
            # Matched budget: rank every passage, keep the best that fit the target.
            total = sum(len(index.passages(s, options.passage_tokens)) for s in skills)
            ranked = self.rank(retrieval_query(case), skills, index,
                               replace(options, top_k=max(total, 1)))
            chosen, used = [], 0
            for p in ranked:
                cost = count_tokens(render_passages([p])) + 1
                if used + cost <= options.target_tokens:
                    chosen.append(p)
                    used += cost
        text = render_passages(chosen)
        units = [ContextUnit(p.id, render_passages([p]), p.skill, ((p.start, p.end),)) for p in chosen]
        ctx = PolicyContext(text, count_tokens(text), units, passages=[p.id for p in chosen])
        return _check_budget(ctx, options)


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
            retrieval_query(case), *by_keywords, skills, index, options.target_tokens)
        return _check_budget(PolicyContext(text, count_tokens(text), units, passages=chunks),
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
            query, keywords, skills, index, options.target_tokens, preset)
        return _check_budget(PolicyContext(text, count_tokens(text), units, passages=chunks),
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
