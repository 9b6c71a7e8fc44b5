"""Accounting of model calls: what each call cost in tokens, time and money."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """One gateway call, attached to the pipeline step that made it.

    Tokens are the served model's own counts, summed over every HTTP attempt of the call
    (retries of failed requests send nothing billable; a repair attempt does). ``cost_usd``
    is litellm's price when it knows the model, else None. For a cache hit ``cached`` is True,
    ``latency_ms`` is the lookup time, ``cost_usd`` is 0 and the token counts are those of the
    original call, so traces still show how large the exchange was. Failed calls are
    accounted too (their ``error`` names the failure), because their tokens were spent.
    """

    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost_usd: float | None
    cached: bool
    model: str
    role: str
    step: str
    attempts: int = 1
    error: str = ""  # the ModelCallError kind when the call failed; "" when it succeeded


@dataclass(frozen=True)
class UsageTotals:
    """Sums over many calls; ``live_*`` fields leave out cache hits."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    live_prompt_tokens: int = 0
    live_completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # live calls whose price litellm did not know


def summarize(usages: Iterable[Usage]) -> UsageTotals:
    every = list(usages)
    live = [u for u in every if not u.cached]
    return UsageTotals(
        calls=len(every),
        cached_calls=len(every) - len(live),
        prompt_tokens=sum(u.prompt_tokens for u in every),
        completion_tokens=sum(u.completion_tokens for u in every),
        live_prompt_tokens=sum(u.prompt_tokens for u in live),
        live_completion_tokens=sum(u.completion_tokens for u in live),
        latency_ms=sum((u.latency_ms for u in every), 0.0),
        cost_usd=sum((u.cost_usd for u in live if u.cost_usd is not None), 0.0),
        unpriced_calls=sum(1 for u in live if u.cost_usd is None),
    )
