"""Closure selection (the core of SkillCDG's Algorithm 2) with explicit outcomes.

Given seed rules per SKILL, the judge context is the transitive ``require`` closure, rendered.
Two situations are outcomes, never silent fallbacks: no seeds at all (``EmptySeed``) and a
rendered closure larger than the token budget (``BudgetExceeded``: we do not truncate, because a
truncated closure is exactly the incomplete context SkillCDG exists to avoid).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.graph import PolicyIndex, UnknownRule
from workbench.render import render_rules
from workbench.tokens import count_tokens


@dataclass(frozen=True)
class ClosureContext:
    seeds: dict[str, list[str]]  # SKILL name -> seed rule ids
    rules: dict[str, list[str]]  # SKILL name -> closure rule ids (seeds first)
    text: str
    tokens: int


@dataclass(frozen=True)
class EmptySeed:
    """No rule matched: there is nothing to judge against."""

    skills: list[str]
    kind: str = "EmptySeed"


@dataclass(frozen=True)
class BudgetExceeded:
    """The rendered closure does not fit the budget; carries what it would have been."""

    rules: dict[str, list[str]]
    tokens: int
    budget: int
    kind: str = "BudgetExceeded"

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

    ``style`` is the rule rendering (``workbench.render.RENDER_STYLES``).
    Raises ``KeyError`` for an unknown SKILL and ``UnknownRule`` for an unknown rule id.
    """
    nonempty = {name: list(ids) for name, ids in seeds.items() if ids}
    if not nonempty:
        return EmptySeed(list(seeds))
    rules: dict[str, list[str]] = {}
    for name, ids in nonempty.items():
        try:
            rules[name] = index[name].graph.closure(ids)
        except UnknownRule as exc:
            raise UnknownRule(exc.ids, name) from None
    text = "\n\n".join(render_rules(index[name], closed, style) for name, closed in rules.items())
    tokens = count_tokens(text)
    if budget is not None and tokens > budget:
        return BudgetExceeded(rules, tokens, budget)
    return ClosureContext(nonempty, rules, text, tokens)
