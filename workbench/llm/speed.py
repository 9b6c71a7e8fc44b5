"""How fast this machine's models answer, measured from the calls they made, and the "about N
s" a page says before a model call (issue #35: an extraction promised "about 40 s" took
277 s, four minutes of them starting the model, and a judge re-run said "up to 3 min" and
took 325 s).

The gateway records every call (``store.llm_cache.SqlUsageLog``: model, role, prompt and
completion tokens, latency). A call's latency is prompt processing plus generation, so over
many calls ``latency = prompt_tokens / P + completion_tokens / G`` (P: prompt tokens per
second, G: generated tokens per second), fitted by least squares with both rates positive
(:func:`fit_speed`). Start-ups of the embedded model are timed when a page starts it
(``store.model_speed``). Pure Python: the store reads the rows, this module does the sums.

Usage::

    speed = fit_speed("embedded", [(900, 80, 21.0), (1500, 60, 31.0), ...])
    speed.call_seconds(1200, 100)       # the estimate of one call
    describe_duration(95)               # 'about 2 min'
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Fewer calls than this measure nothing reliable: the page falls back to its fixed guess.
MIN_CALLS = 3
# Calls whose two token counts are (nearly) proportional cannot tell P from G apart; below
# this relative spread the fit keeps only the seconds per call.
MIN_SPREAD = 1e-6

Sample = tuple[int, int, float]  # (prompt tokens, completion tokens, latency seconds)


@dataclass(frozen=True)
class Speed:
    """Measured speed of one model on this machine (from ``calls`` recent live calls)."""

    model: str
    calls: int
    prompt_tps: float | None  # prompt tokens per second; None when not separable
    generated_tps: float | None  # generated tokens per second; None when not separable
    seconds_per_call: float  # median latency of the calls
    typical_completion: int  # median completion tokens of the calls

    def call_seconds(self, prompt_tokens: int, completion_tokens: int | None = None) -> float:
        """Estimated seconds of one call with these token counts (completion: the typical
        one when not given)."""
        completion = self.typical_completion if completion_tokens is None else completion_tokens
        if self.prompt_tps and self.generated_tps:
            return prompt_tokens / self.prompt_tps + completion / self.generated_tps
        return self.seconds_per_call

    def describe(self) -> str:
        """``"52 prompt tok/s, 18 generated tok/s (40 calls)"``."""
        if self.prompt_tps and self.generated_tps:
            return (f"{self.prompt_tps:.0f} prompt tok/s, {self.generated_tps:.0f} generated "
                    f"tok/s ({self.calls} calls)")
        return f"{self.seconds_per_call:.0f} s per call ({self.calls} calls)"


def _solve(samples: Sequence[Sample]) -> tuple[float, float] | None:
    """Least squares of ``latency = a * prompt + b * completion`` with a, b > 0; None when
    the calls cannot separate the two (or a rate comes out non-positive)."""
    spp = sum(p * p for p, _c, _t in samples)
    scc = sum(c * c for _p, c, _t in samples)
    spc = sum(p * c for p, c, _t in samples)
    spt = sum(p * t for p, _c, t in samples)
    sct = sum(c * t for _p, c, t in samples)
    det = spp * scc - spc * spc
    if spp <= 0 or scc <= 0 or det <= MIN_SPREAD * spp * scc:
        return None
    a = (spt * scc - sct * spc) / det
    b = (sct * spp - spt * spc) / det
    if a <= 0 or b <= 0:
        return None
    return a, b


def fit_speed(model: str, samples: Iterable[Sample]) -> Speed | None:
    """The speed of ``model`` from its calls (live, successful), or None for fewer than
    :data:`MIN_CALLS`. Samples with a non-positive latency are ignored."""
    calls = [(int(p), int(c), float(t)) for p, c, t in samples if t > 0 and p >= 0 and c >= 0]
    if len(calls) < MIN_CALLS:
        return None
    rates = _solve(calls)
    median = statistics.median(t for _p, _c, t in calls)
    typical = int(statistics.median(c for _p, c, _t in calls))
    if rates is None:
        return Speed(model, len(calls), None, None, median, typical)
    a, b = rates
    return Speed(model, len(calls), 1 / a, 1 / b, median, typical)


def describe_duration(seconds: float) -> str:
    """``"about 40 s"``, ``"about 12 min"``, ``"about 3.5 h"``, ``"about 4 days"``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"about {seconds / 3600:.1f} h"
    return f"about {round(seconds / 86400)} days"


def startup_estimate(measured: Sequence[float]) -> float | None:
    """Seconds a model start-up takes here: the median of the recent start-ups timed."""
    return statistics.median(measured) if measured else None
