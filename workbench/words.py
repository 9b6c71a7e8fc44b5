"""Values as a person reads them: the one formatting layer of every screen (issue 44 item 4).

- :func:`plural`: counted nouns, "1 rule", "2 rules", "0 proposals" (issue 35); irregular
  plurals are passed explicitly (``plural(n, "analysis", "analyses")``).
- :func:`duration` / :func:`duration_ms`: "450 ms", "12 s", "3 min 9 s", "2 h 5 min".
- :data:`MISSING`: what stands where a value is missing or undefined ("–", never "None" or
  "nan"); :func:`value` and :func:`number` use it.
- :func:`probability`: one word band per probability range ("likely violation — 83 %"),
  :func:`workbench.audit.selective.decision_words`'s bands, unchanged.
- :func:`agreement`: κ and α with their band ("0.62 (substantial)"), or "too few decisions to
  measure" below :data:`MIN_AGREEMENT_DECISIONS`.
- :func:`label`: a field name as a plain label ("prompt_tokens" -> "prompt tokens",
  "latency_ms" -> "latency").

Pure Python, no Streamlit: the pages and the CLI share it. Strategies, judge modes and other
domain words stay in :mod:`workbench.vocabulary`; glossary meanings in :mod:`workbench.glossary`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.glossary import NOT_APPLICABLE, agreement_text

if TYPE_CHECKING:
    from workbench.decision.decide import Decided

MISSING = NOT_APPLICABLE  # "–": the glossary's word for "does not apply", one dash everywhere
# Below this many decisions a κ is noise ("0.00 (slight)" after one decision, issue 44).
MIN_AGREEMENT_DECISIONS = 10
TOO_FEW = "too few decisions to measure"

# Field names whose plain label is not just the name with spaces (units move to the value).
LABELS: Mapping[str, str] = {
    "latency_ms": "latency",
    "latency ms": "latency",
    "duration_ms": "duration",
    "elapsed_s": "time taken",
    "ctx_size": "context size",
    "n_items": "items",
    "n_rules": "rules",
    "cache_key": "cache key",
    "request_key": "request key",
}


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one (thousands grouped: "1,000 traces")."""
    noun = singular if count == 1 else (plural_form or singular + "s")
    return f"{count:,} {noun}"


def is_missing(v: Any) -> bool:
    """None, NaN (float or numpy/pandas), or pandas' NA/NaT: a value that is not there."""
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, NA and NaT are not equal to themselves
    except (TypeError, ValueError):  # pandas.NA raises on bool(); arrays are not one value
        return type(v).__name__ in ("NAType", "NaTType")


def duration(seconds: float | None) -> str:
    """"450 ms" below a second, "8.5 s" below ten, "42 s", "3 min 9 s", "2 h 5 min"; "–"
    when unknown. Never a raw float of milliseconds."""
    if is_missing(seconds):
        return MISSING
    s = float(seconds)  # type: ignore[arg-type]
    if math.isinf(s):
        return MISSING
    if s < 1:
        return f"{round(s * 1000)} ms"
    if s < 10:
        return f"{s:.1f} s".replace(".0 s", " s")
    whole = round(s)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        m, rest = divmod(whole, 60)
        return f"{m} min" + (f" {rest} s" if rest else "")
    h, rest = divmod(whole, 3600)
    m = round(rest / 60)
    if m == 60:
        h, m = h + 1, 0
    return f"{h} h" + (f" {m} min" if m else "")


def duration_ms(ms: float | None) -> str:
    """:func:`duration` of a time given in milliseconds (``latency_ms`` fields)."""
    return MISSING if is_missing(ms) else duration(float(ms) / 1000.0)  # type: ignore[arg-type]


def number(v: float | int | None, decimals: int = 2) -> str:
    """A number to read: integers grouped ("12,345"), other values with at most ``decimals``
    decimals, trailing zeros dropped ("0.86", "1,555.33", "3"); "–" when missing."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    f = float(v)  # type: ignore[arg-type]
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    text = f"{f:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def percent(share: float | None, decimals: int = 0) -> str:
    """A share 0..1 as a percentage ("83%"); "–" when missing."""
    return MISSING if is_missing(share) else f"{float(share):.{decimals}%}"  # type: ignore[arg-type]


def value(v: Any) -> str:
    """Any single value for a cell or a caption: missing -> "–", booleans -> yes/no,
    numbers through :func:`number`, everything else as its text."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        return number(v)
    try:  # numpy scalars
        import numbers

        if isinstance(v, numbers.Number):
            return number(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pass
    return str(v)


def probability(decided: Decided | None) -> str:
    """One word band per probability range: "likely violation — 83 %", "probably compliant
    — 65 %" (:func:`workbench.audit.selective.decision_words`); "–" without a score."""
    # Imported here: loading workbench.audit costs ~0.3 s, which `workbench --help` and the
    # CLI commands that only count nouns should not pay.
    from workbench.audit.selective import decision_words

    return MISSING if decided is None else decision_words(decided)


def agreement(v: float | None, decisions: int, statistic: str = "Cohen's κ",
              minimum: int = MIN_AGREEMENT_DECISIONS) -> str:
    """A κ or α with its band ("0.62 (substantial)"); "too few decisions to measure" on
    fewer than ``minimum`` decisions (a κ of one decision reads "0.00 (slight)", which is
    noise, not slight agreement); "–" when undefined."""
    if decisions < minimum:
        return TOO_FEW
    return agreement_text(v, statistic)


def label(field: str) -> str:
    """A field name as a plain label: "prompt_tokens" -> "prompt tokens", "latency_ms" ->
    "latency" (see :data:`LABELS`); a name without underscores is returned as it is."""
    if field in LABELS:
        return LABELS[field]
    return field.replace("_", " ")


def labelled(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with plain labels for its keys (values unchanged)."""
    return {label(str(k)): v for k, v in row.items()}
