"""Accounting of model calls: what each call cost in tokens, time and money."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass


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

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        return asdict(self)


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

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(usages: Iterable[Usage]) -> UsageTotals:
    calls = cached = prompt = completion = live_prompt = live_completion = unpriced = 0
    latency = cost = 0.0
    for u in usages:
        calls += 1
        prompt += u.prompt_tokens
        completion += u.completion_tokens
        latency += u.latency_ms
        if u.cached:
            cached += 1
            continue
        live_prompt += u.prompt_tokens
        live_completion += u.completion_tokens
        if u.cost_usd is None:
            unpriced += 1
        else:
            cost += u.cost_usd
    return UsageTotals(
        calls=calls,
        cached_calls=cached,
        prompt_tokens=prompt,
        completion_tokens=completion,
        live_prompt_tokens=live_prompt,
        live_completion_tokens=live_completion,
        latency_ms=latency,
        cost_usd=cost,
        unpriced_calls=unpriced,
    )
