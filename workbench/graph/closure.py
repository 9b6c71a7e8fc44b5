"""Closure selection (the core of SkillCDG's Algorithm 2) with explicit outcomes.

Given seed rules per SKILL, the judge context is the transitive ``require`` closure, rendered.
Two situations are outcomes, never silent fallbacks: no seeds at all (``EmptySeed``) and a
rendered closure larger than the token budget (``BudgetExceeded``: we do not truncate, because a
truncated closure is exactly the incomplete context SkillCDG exists to avoid).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workbench.graph.policy_index import PolicyIndex
from workbench.graph.render import render_rules
from workbench.graph.rule_graph import UnknownRule
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import ErrorKind


@dataclass(frozen=True)
class ClosureContext:
    seeds: dict[str, list[str]]  # SKILL name -> seed rule ids
    rules: dict[str, list[str]]  # SKILL name -> closure rule ids (seeds first)
    text: str
    tokens: int
    # SKILL name -> rule id -> the require path from its seed (RuleGraph.closure_paths)
    paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class EmptySeed:
    """No rule matched: there is nothing to judge against."""

    skills: list[str]
    kind: str = ErrorKind.EMPTY_SEED


@dataclass(frozen=True)
class BudgetExceeded:
    """The rendered closure does not fit the budget; carries what it would have been."""

    rules: dict[str, list[str]]
    tokens: int
    budget: int
    kind: str = ErrorKind.BUDGET_EXCEEDED
    paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def message(self) -> str:
        n = sum(len(v) for v in self.rules.values())
        return (
            f"the closure of {n} rules renders to {self.tokens} tokens, over the budget of "
            f"{self.budget}; raise the budget or narrow the seeds (no truncation is done)"
        )


ClosureOutcome = ClosureContext | EmptySeed | BudgetExceeded


def select_closure(
    index: PolicyIndex,
    seeds: Mapping[str, Sequence[str]],
    budget: int | None = None,
    style: str = "full",
) -> ClosureOutcome:
    """Close ``seeds`` (SKILL name -> rule ids) over ``require`` edges and render the result.

    ``style`` is the rule rendering (``workbench.graph.render.RENDER_STYLES``).
    Raises ``KeyError`` for an unknown SKILL and ``UnknownRule`` for an unknown rule id.
    """
    nonempty = {name: list(ids) for name, ids in seeds.items() if ids}
    if not nonempty:
        return EmptySeed(list(seeds))
    paths = closure_paths(index, nonempty)
    rules = {name: list(by_rule) for name, by_rule in paths.items()}
    text = "\n\n".join(render_rules(index[name], closed, style) for name, closed in rules.items())
    tokens = count_tokens(text)
    if budget is not None and tokens > budget:
        return BudgetExceeded(rules, tokens, budget, paths=paths)
    return ClosureContext(nonempty, rules, text, tokens, paths)


def closure_paths(index: PolicyIndex, seeds: Mapping[str, Sequence[str]]
                  ) -> dict[str, dict[str, list[str]]]:
    """Per SKILL with seeds, each closure rule (in closure order) and the ``require`` path
    from the seed that brought it (``RuleGraph.closure_paths``). Raises ``KeyError`` for an
    unknown SKILL and ``UnknownRule`` naming the SKILL for an unknown rule id."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, ids in seeds.items():
        if not ids:
            continue
        try:
            out[name] = index[name].graph.closure_paths(ids)
        except UnknownRule as exc:
            raise UnknownRule(exc.ids, name) from None
    return out


def explain_path(path: Sequence[str]) -> str:
    """A path as the analyst reads it: ``seed R3 → R7 → R9`` (a seed alone: ``seed R3``)."""
    return "seed " + " → ".join(path) if path else ""
