"""A verdict's violation probability: from the verdict token's log-probabilities, or from k
sampled answers where the server gives none.

``logprobs``: the judge call asks for the top alternatives of every generated token; the
probability is read where the answer writes its verdict value (``workbench.llm.logprobs``).
That costs nothing extra. ``sampled``: k more answers at a sampling temperature, each its own
request (``seed`` 1..k, so each is cached and recorded on its own); the probability is the
share of them that find a violation, and is recorded as ``sampled:k``. ``auto`` (the default)
asks for log-probabilities and samples only when the server returned none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.audit.judge.units import call_record, failed_record
from workbench.audit.trace import ModelCall
from workbench.llm.errors import ModelCallError
from workbench.vocabulary import ProbabilityMethod

DEFAULT_SAMPLES = 5
DEFAULT_SAMPLE_TEMPERATURE = 0.7  # the first paper's sampling temperature (Table 13)
TOP_LOGPROBS = 10


@dataclass(frozen=True)
class ProbabilityOptions:
    method: str = ProbabilityMethod.AUTO
    samples: int = DEFAULT_SAMPLES
    temperature: float = DEFAULT_SAMPLE_TEMPERATURE

    def __post_init__(self) -> None:
        if self.method not in tuple(ProbabilityMethod):
            raise ValueError(f"probability method {self.method!r} is not one of "
                             f"{', '.join(ProbabilityMethod)}")
        if not 1 <= self.samples <= 50:
            raise ValueError(f"samples must be between 1 and 50, not {self.samples}")
        if not 0.0 < self.temperature <= 2.0:
            raise ValueError(f"sample temperature must be in (0, 2], not {self.temperature}")

    @property
    def top_logprobs(self) -> int | None:
        """What the judge call asks for (None: no log-probabilities)."""
        wants = self.method in (ProbabilityMethod.AUTO, ProbabilityMethod.LOGPROBS)
        return TOP_LOGPROBS if wants else None

    def should_sample(self, have_logprob_value: bool) -> bool:
        if self.method == ProbabilityMethod.SAMPLED:
            return True
        return self.method == ProbabilityMethod.AUTO and not have_logprob_value


@dataclass(frozen=True)
class Probability:
    value: float | None
    source: str  # "logprobs", "sampled:K" or ""

    @classmethod
    def none(cls) -> Probability:
        return cls(None, "")


def sampled(draw: Callable[[int], bool | None], k: int) -> Probability:
    """The share of violations among ``k`` draws (``draw(seed)`` gives one sampled verdict,
    or None when that sample failed; failed samples are left out and the count says so)."""
    votes = [v for v in (draw(seed) for seed in range(1, k + 1)) if v is not None]
    if not votes:
        return Probability.none()
    return Probability(round(sum(votes) / len(votes), 4), f"sampled:{len(votes)}")


def sampled_answers(ask_sample: Callable[[int], Any], violation: Callable[[Any], bool], k: int,
                    calls: list[ModelCall]) -> Probability:
    """``sampled`` over ``k`` judge calls: ``ask_sample(seed)`` makes one, ``violation(result)``
    reads its verdict. Each call is recorded in ``calls`` (``judge:sample{seed}``); one that
    fails for good is recorded when its error carries usage and left out of the share."""

    def draw(seed: int) -> bool | None:
        try:
            res = ask_sample(seed)
        except ModelCallError as exc:  # one failed sample is left out, not the verdict
            if (rec := failed_record(f"judge:sample{seed}", exc)) is not None:
                calls.append(rec)
            return None
        calls.append(call_record(f"judge:sample{seed}", res))
        return violation(res)

    return sampled(draw, k)


def clamp(p: float) -> float:
    return round(min(1.0, max(0.0, p)), 4)
