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
============  ====================================================================

The retrieval baselines query with the last user message plus the reply (what a RAG system
has natively); they need no audit keywords. A context over the token ``budget`` is
``BudgetExceeded`` for every strategy: nothing is truncated.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from workbench.audit.cases import AuditCase
from workbench.audit.judge import ContextUnit
from workbench.audit.passages import Passage, render_passages
from workbench.audit.policy import AuditIndex
from workbench.audit.seeds import DEFAULT_MAX_SEEDS, find_seeds
from workbench.closure import BudgetExceeded, EmptySeed, select_closure
from workbench.render import render_rule, render_rules
from workbench.tokens import count_tokens

EMPTY_SEED_POLICIES = ("error", "all-rules")


@dataclass(frozen=True)
class ContextOptions:
    max_seeds: int = DEFAULT_MAX_SEEDS
    empty_seed: str = "error"  # "error": EmptySeed outcome; "all-rules": judge every rule
    budget: int | None = None  # token budget for the rendered context
    # SOFT token target for the rendered context (from the judge's window, see
    # ``workbench.audit.window``): strategies and seeding try to fit it, nothing fails over
    # it; the pipeline judges a context over it in parts. ``budget`` stays the HARD limit.
    target_tokens: int | None = None
    top_k: int = 6  # passages for bm25 / dense
    passage_tokens: int = 200


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


class ContextUnavailable(Exception):
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


def _rule_units(index: AuditIndex, rules: dict[str, list[str]]) -> list[ContextUnit]:
    out = []
    for name, ids in rules.items():
        skill = index.skill(name)
        for rid in ids:
            spans = tuple((sp.start, sp.end) for sp in skill.graph.rules[rid].spans)
            out.append(ContextUnit(rid, render_rule(skill, rid), name, spans))
    return out


def _check_budget(ctx: PolicyContext, options: ContextOptions) -> PolicyContext:
    if options.budget is not None and ctx.tokens > options.budget:
        n = len(ctx.units)
        raise ContextUnavailable(
            "BudgetExceeded",
            f"the context of {n} item(s) renders to {ctx.tokens} tokens, over the budget of "
            f"{options.budget}; raise the budget or narrow the seeds (no truncation is done)",
            ctx,
        )
    return ctx


def _render_rule_sets(index: AuditIndex, rules: dict[str, list[str]]) -> str:
    return "\n\n".join(
        part for name, ids in rules.items() if (part := render_rules(index.skill(name), ids))
    )


class _SeededStrategy:
    uses_keywords = True
    close = True

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        found = find_seeds(index, skills, keywords, options.max_seeds)
        seeds = {s: ids for s, ids in found.seeds.items() if ids}
        fallback = None
        if not seeds:
            if options.empty_seed != "all-rules":
                raise ContextUnavailable(
                    EmptySeed(list(skills)).kind,
                    f"no rule of {', '.join(skills)} matches the keywords {list(keywords)!r}; "
                    "nothing to judge against (use --empty-seed all-rules to judge every rule, "
                    "or --keywords llm)",
                    PolicyContext("", 0, [], {s: [] for s in skills}),
                )
            seeds = {s: list(index.skill(s).graph.rules) for s in skills}
            fallback = "all-rules"
        if self.close and fallback is None:
            outcome = select_closure(index.index, seeds, options.budget)
            if isinstance(outcome, BudgetExceeded):
                raise ContextUnavailable(
                    "BudgetExceeded",
                    outcome.message,
                    PolicyContext(
                        "", outcome.tokens, [], seeds, found.matches, outcome.rules
                    ),
                )
            assert not isinstance(outcome, EmptySeed)
            rules, text, tokens = outcome.rules, outcome.text, outcome.tokens
        else:
            rules = seeds
            text = _render_rule_sets(index, rules)
            tokens = count_tokens(text)
        ctx = PolicyContext(
            text, tokens, _rule_units(index, rules), seeds, found.matches, rules, fallback=fallback
        )
        return _check_budget(ctx, options)


class CdgStrategy(_SeededStrategy):
    name = "cdg"


class NoClosureStrategy(_SeededStrategy):
    name = "no-closure"
    close = False


class NoKeywordsStrategy:
    name = "no-keywords"
    uses_keywords = False

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        rules = {s: list(index.skill(s).graph.rules) for s in skills}
        text = _render_rule_sets(index, rules)
        ctx = PolicyContext(text, count_tokens(text), _rule_units(index, rules), closure=rules)
        return _check_budget(ctx, options)


class RawStrategy:
    name = "raw"
    uses_keywords = False

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        units = []
        for s in skills:
            skill = index.skill(s)
            text = f"[{s}] (the whole SKILL document)\n{skill.source.strip()}"
            units.append(ContextUnit(s, text, s, ((0, len(skill.source)),)))
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
        chosen = self.rank(retrieval_query(case), skills, index, options)
        text = render_passages(chosen)
        units = [ContextUnit(p.id, render_passages([p]), p.skill, ((p.start, p.end),)) for p in chosen]
        ctx = PolicyContext(text, count_tokens(text), units, passages=[p.id for p in chosen])
        return _check_budget(ctx, options)


class Bm25Strategy(_RetrievalStrategy):
    name = "bm25"

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
    name = "dense"

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


STRATEGIES: dict[str, type] = {
    "cdg": CdgStrategy,
    "raw": RawStrategy,
    "bm25": Bm25Strategy,
    "dense": DenseStrategy,
    "no-closure": NoClosureStrategy,
    "no-keywords": NoKeywordsStrategy,
}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        ) from None
