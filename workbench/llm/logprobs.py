"""Token log-probabilities: a compact, checked form, and reading a JSON value's distribution.

Servers that return log-probabilities (llama.cpp, vLLM, SGLang, most hosted APIs; asked for
with ``logprobs=True, top_logprobs=N`` through litellm) give, for every generated token, its
log-probability and the N most likely alternatives at that position. We keep them as
``[[token, logprob, [[alternative, logprob], ...]], ...]``: plain JSON for recordings, the
response cache and traces. Alternatives below :data:`FLOOR` (probability < 6e-6) are dropped:
they cannot move a probability we read by more than that, and they would multiply the size
of every recording.

:func:`value_distribution` answers "when the model wrote the value of key ``violation``, how
likely was each allowed value?". It finds where the value starts in the generated text, and
classifies the alternatives the model had at that token by which allowed value they begin.
llama.cpp reports the model's own distribution there (before its grammar sampler), so the
figure is the model's belief, not the grammar's; the share of the allowed values among
themselves is what we read (tokens that begin no allowed value are left out).

Server output is untrusted: anything that is not this shape reads as "no log-probabilities".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

FLOOR = -12.0
MAX_TOKENS = 8192  # more generated tokens than any structured answer of ours


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _logprob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    if math.isnan(value) or value > 1e-6:
        return None
    return max(value, -1e4) if math.isfinite(value) else -1e4


def compact_logprobs(raw: Any) -> list[Any] | None:
    """The compact form of what a server returned as ``choice.logprobs`` (an OpenAI/litellm
    object or dict with ``content``), or of an already compact list; None when absent or not
    of that shape."""
    if raw is None:
        return None
    if isinstance(raw, list):
        return _checked_compact(raw)
    content = _field(raw, "content")
    if not isinstance(content, list) or not content or len(content) > MAX_TOKENS:
        return None
    out: list[Any] = []
    for entry in content:
        token, lp = _field(entry, "token"), _logprob(_field(entry, "logprob"))
        if not isinstance(token, str) or lp is None:
            return None
        alts: list[list[Any]] = []
        for alt in _field(entry, "top_logprobs") or []:
            a_tok, a_lp = _field(alt, "token"), _logprob(_field(alt, "logprob"))
            if isinstance(a_tok, str) and a_lp is not None and a_lp >= FLOOR:
                alts.append([a_tok, round(a_lp, 4)])
        out.append([token, round(lp, 4), alts])
    return out


def _checked_compact(items: list[Any]) -> list[Any] | None:
    if not items or len(items) > MAX_TOKENS:
        return None
    out: list[Any] = []
    for item in items:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[2], list)):
            return None
        lp = _logprob(item[1])
        if lp is None:
            return None
        alts = []
        for alt in item[2]:
            if not (isinstance(alt, list) and len(alt) == 2 and isinstance(alt[0], str)):
                return None
            a_lp = _logprob(alt[1])
            if a_lp is None:
                return None
            alts.append([alt[0], a_lp])
        out.append([item[0], lp, alts])
    return out


def value_starts(logprobs: Sequence[Any], key: str) -> list[int]:
    """Character offsets, in the text the tokens spell, where each value of JSON key ``key``
    begins (after ``"key":`` and blanks, and after the opening quote of a string value)."""
    text = "".join(t[0] for t in logprobs)
    pattern = re.compile(r'"' + re.escape(key) + r'"\s*:\s*"?')
    return [m.end() for m in pattern.finditer(text)]


def value_distribution(
    logprobs: Sequence[Any] | None, key: str, choices: Sequence[str], occurrence: int = 0
) -> dict[str, float] | None:
    """P(each of ``choices``) for the ``occurrence``-th value of ``key`` in the generated JSON,
    normalised over ``choices``; None when the tokens do not show that value or no alternative
    at its first token begins an allowed value.

    An alternative token counts for the choice it begins (``" tr"`` for ``true``), after the
    part of the token that comes before the value (``'": '`` when the server merged the colon
    and the value into one token). A token that begins two choices (a shared prefix) counts
    for none: the next token decides, and we do not follow both branches.
    """
    if not logprobs:
        return None
    starts = value_starts(logprobs, key)
    if occurrence >= len(starts):
        return None
    at = starts[occurrence]
    pos = 0
    for token, lp, alts in logprobs:
        end = pos + len(token)
        if end > at:
            lead = token[: at - pos]
            mass = {c: 0.0 for c in choices}
            seen: set[str] = set()
            for alt, alt_lp in [[token, lp], *alts]:
                if alt in seen:
                    continue
                seen.add(alt)
                if not alt.startswith(lead):
                    continue
                rest = alt[len(lead):].lstrip().lower()
                if not rest:
                    continue
                hits = [c for c in choices if c.lower().startswith(rest) or rest.startswith(c.lower())]
                if len(hits) == 1:
                    mass[hits[0]] += math.exp(alt_lp)
            total = sum(mass.values())
            if total <= 0:
                return None
            return {c: m / total for c, m in mass.items()}
        pos = end
    return None


def probability_of(
    logprobs: Sequence[Any] | None, key: str, value: str, choices: Sequence[str], occurrence: int = 0
) -> float | None:
    """P(``value``) among ``choices`` for that value of ``key`` (see :func:`value_distribution`)."""
    dist = value_distribution(logprobs, key, choices, occurrence)
    return None if dist is None else dist[value]
