"""Rewards for the retrieval stage (keyworder) and group-normalised advantages for GRPO.

Second paper, §4.2.1: a keyword candidate is rewarded by what the graph does with it.

- :func:`verified_reward`: ``format validity × non-empty closure × verdict correctness``.
  Unparsable keywords or keywords that seed nothing score 0 whatever the judge would say
  (the closure is the graph's validity gate); a valid closure scores 1 only when the judge,
  given that closure, reaches the gold verdict.
- :func:`coverage_reward`: the cheap verifiable variant, no judge call: the share of the
  gold governing rules inside the closure minus ``λ · tokens / 1000`` of the rendered
  context (the second paper's "future work": reward prerequisite-chain completeness, and pay for
  every token the judge must read). Also 0 for unparsable keywords or an empty closure.

Model output is untrusted: :func:`parse_keywords` accepts only the keyword JSON object the
prompt asks for and returns None for anything else.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from workbench.audit.cases import AuditCase
from workbench.audit.keywords import DEFAULT_MAX_LLM_KEYWORDS, clean_keywords
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions, ContextUnavailable, PolicyContext
from workbench.audit.routing import RoutingError, route
from workbench.audit.strategies import get_strategy
from workbench.vocabulary import Seeding, StrategyName

# A judge for the verified reward: (case, closure context) -> predicted violation, or None
# when the judge gave no verdict (which counts as incorrect).
Judge = Callable[[AuditCase, PolicyContext], bool | None]
DEFAULT_TOKEN_COST = 0.05  # λ per 1000 context tokens: a 1000-token closure costs 0.05
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_keywords(text: str, max_keywords: int = DEFAULT_MAX_LLM_KEYWORDS) -> list[str] | None:
    """The keywords of a completion ``{"keywords": [...]}`` (optionally in a ```json fence),
    or None when it is not that object, holds no usable keyword, or more than the limit."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("keywords"), list):
        return None
    raw = data["keywords"]
    if len(raw) > max_keywords or not all(isinstance(k, str) for k in raw):
        return None
    keywords = clean_keywords(raw, max_keywords)
    return keywords or None


@dataclass
class KeywordOutcome:
    """What the graph made of one keyword candidate (kept for logging and debugging)."""

    keywords: list[str] | None
    context: PolicyContext | None = None
    error: str = ""
    rules: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.keywords is not None

    @property
    def closure_nonempty(self) -> bool:
        return bool(self.rules)


def keyword_closure(
    case: AuditCase,
    completion: str,
    index: AuditIndex,
    strategy: str = StrategyName.CDG,
    options: ContextOptions | None = None,
    max_keywords: int = DEFAULT_MAX_LLM_KEYWORDS,
) -> KeywordOutcome:
    """Route, seed and close with the candidate's keywords, as the audit's keyword seeding
    does. The default is ``seeding="keywords"``: the reward must answer for the keywords alone
    (the scored seeding also reads the whole conversation, so a useless candidate would still
    earn a closure and the GRPO signal would not separate good keywords from bad)."""
    keywords = parse_keywords(completion, max_keywords)
    if keywords is None:
        return KeywordOutcome(None, error="FormatInvalid")
    try:
        routing = route(case, keywords, index)
        opts = options or ContextOptions(seeding=Seeding.KEYWORDS)
        ctx = get_strategy(strategy).build(case, keywords, routing.skills, index, opts)
    except (RoutingError, ContextUnavailable) as exc:
        return KeywordOutcome(keywords, error=exc.kind)
    rules = [rid for ids in ctx.closure.values() for rid in ids]
    return KeywordOutcome(keywords, ctx, "", rules)


def verified_reward(outcome: KeywordOutcome, case: AuditCase, judge: Judge) -> float:
    """``valid × non-empty closure × [judge verdict == gold]``; 0 for unlabelled cases."""
    if not outcome.valid or not outcome.closure_nonempty or outcome.context is None:
        return 0.0
    if case.label is None:
        return 0.0
    predicted = judge(case, outcome.context)
    if predicted is None:
        return 0.0
    return 1.0 if bool(predicted) == case.expected_violation else 0.0


def coverage_reward(
    outcome: KeywordOutcome, gold: Sequence[str], token_cost: float = DEFAULT_TOKEN_COST
) -> float:
    """``|gold ∩ closure| / |gold| − token_cost · tokens / 1000``; 0 when the keywords are
    invalid or the closure empty. Raises ValueError without gold rules (nothing to cover)."""
    if not gold:
        raise ValueError(
            "the coverage reward needs the case's gold governing rules (gold.governing_rule); "
            "use the verified reward for cases without them"
        )
    if not outcome.valid or not outcome.closure_nonempty or outcome.context is None:
        return 0.0
    inside = set(outcome.rules)
    covered = sum(1 for g in set(gold) if g in inside) / len(set(gold))
    return covered - token_cost * outcome.context.tokens / 1000.0


@dataclass(frozen=True)
class GroupAdvantages:
    advantages: list[float]
    zero_groups: int  # groups whose rewards are all equal: no learning signal
    groups: int

    @property
    def zero_share(self) -> float:
        return self.zero_groups / self.groups if self.groups else math.nan


def group_advantages(rewards: Sequence[float], group_size: int, eps: float = 1e-4) -> GroupAdvantages:
    """GRPO advantages: ``(r_i − mean_g) / (std_g + eps)`` within each consecutive group of
    ``group_size`` candidates (population std, as in DeepSeekMath's GRPO). A group whose
    rewards are all equal gets advantage 0 for each candidate and counts as a zero group."""
    if group_size < 2:
        raise ValueError(f"GRPO needs at least 2 candidates per group, got {group_size}")
    if len(rewards) % group_size:
        raise ValueError(
            f"{len(rewards)} rewards do not split into groups of {group_size}; give K rewards per case"
        )
    out: list[float] = []
    zero = 0
    groups = len(rewards) // group_size
    for g in range(groups):
        chunk = [float(r) for r in rewards[g * group_size : (g + 1) * group_size]]
        mean = sum(chunk) / group_size
        std = math.sqrt(sum((r - mean) ** 2 for r in chunk) / group_size)
        if max(chunk) - min(chunk) == 0.0:
            zero += 1
            out.extend([0.0] * group_size)
        else:
            out.extend((r - mean) / (std + eps) for r in chunk)
    return GroupAdvantages(out, zero, groups)
