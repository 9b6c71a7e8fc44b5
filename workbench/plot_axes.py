"""Axis labels that stay readable, for the workbench's plotly figures (issue #35: long run
names squashed the Evaluate bars, a facet's tick labels overlapped, and a log axis read
"5, 1, 2, 5, 10, 2"). Pure functions: the figures call them with their data.

Usage::

    short_labels(["cdg · review-20260101T101010Z", "raw"], width=20)
    # ['cdg · review-20260…', 'raw']
    log_ticks(0.5, 72)   # [0.5, 1, 2, 5, 10, 20, 50]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

ELLIPSIS = "…"
STEPS = (1, 2, 5)  # ticks per decade on a log axis


def short_labels(names: Sequence[str], width: int = 28) -> list[str]:
    """``names`` cut to ``width`` characters (an ellipsis marks the cut), still one label
    per name: two names that cut to the same text get " (2)", " (3)"... so a chart never
    merges their bars. The full names go into the hover text."""
    if width < 4:
        raise ValueError("width must leave room for some text and the ellipsis (>= 4)")
    out: list[str] = []
    seen: dict[str, int] = {}
    full_of: dict[str, str] = {}
    for name in names:
        label = name if len(name) <= width else name[: width - 1].rstrip() + ELLIPSIS
        if label in full_of and full_of[label] != name:
            seen[label] = seen.get(label, 1) + 1
            label = f"{label} ({seen[label]})"
        full_of.setdefault(label, name)
        out.append(label)
    return out


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values 1, 2, 5, 10, 20, 50, ... (times powers of ten) covering ``[low, high]``
    (both > 0), one of each just outside so the ends are labelled: a log axis that reads in
    order, instead of plotly's minor digits ("5, 1, 2, 5, 10, 2")."""
    if not (low > 0 and high > 0):
        raise ValueError("a log axis needs positive bounds")
    low, high = min(low, high), max(low, high)
    ticks = []
    for exp in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for step in STEPS:
            value = step * 10.0 ** exp
            ticks.append(float(f"{value:.12g}"))
    below = [t for t in ticks if t <= low]
    above = [t for t in ticks if t >= high]
    start = ticks.index(below[-1]) if below else 0
    stop = ticks.index(above[0]) if above else len(ticks) - 1
    return ticks[start: stop + 1]


def tick_text(value: float) -> str:
    """``0.5``, ``1``, ``20``, ``1000``: a tick value as people write it."""
    return f"{value:g}" if value < 1e5 else f"{value:.0e}"
