"""When the outcomes cannot tell what complexity does, say so.

Two signs, either enough:

- **C hardly varies.** Each dataset has its own intercept gamma_d, so a complexity
  coefficient is learned only from C's spread *within* a dataset. With a relative spread
  ``s = (max C - min C) / median C`` (over the dataset's instances), a coefficient b moves the
  logit by ``b * s`` across all of the data; inside the search box (|b| <= 10) that is at most
  ``10 * s``. Below :data:`COMPLEXITY_TOLERANCE` (1 %: at most 0.1 logit, ~2.5 points of P,
  from the simplest to the most complex case) the data cannot fix b — the likelihood is flat
  along it and the optimiser stops wherever the box lets it. Measured: the real two-size
  outcomes (CompliBench airlines, 27 SKILLs cut from one policy) span C 1.1127–1.1138
  (s = 0.10 %), and the additive fit ran to gamma = −9.72, b = +10.0, the bound.
- **A fitted coefficient reaches a search bound** (``ScalingFit.at_bounds``): the box, not
  the data, chose it.

Then the analysis reports the size-only model ``logit P = gamma_d + a ln N`` (with one judge
size: the intercept), and its notes say why in words.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench.scaling.fit import ScalingFit
from workbench.scaling.laws import FAMILY_BOUNDS, GAMMA_BOUNDS, NO_TERMS, SIZE_ONLY

COMPLEXITY_TOLERANCE = 0.01


@dataclass(frozen=True)
class ComplexitySpread:
    """C over one dataset's instances."""

    dataset: str
    low: float
    high: float
    median: float

    @property
    def relative(self) -> float:
        """``(max - min) / median``; 0 when the median is 0 (nothing to scale by)."""
        return (self.high - self.low) / self.median if self.median > 0 else 0.0


def complexity_spreads(outcomes: pd.DataFrame) -> list[ComplexitySpread]:
    """One :class:`ComplexitySpread` per dataset, each instance counted once."""
    instances = outcomes.drop_duplicates(["dataset", "instance"])
    return [
        ComplexitySpread(str(d), float(g["complexity"].min()), float(g["complexity"].max()),
                         float(g["complexity"].median()))
        for d, g in instances.groupby("dataset", sort=True)
    ]


def fallback_model(outcomes: pd.DataFrame) -> str:
    """The model reported when complexity cannot be identified: size-only with two or more
    judge sizes, the intercept with one."""
    return SIZE_ONLY if outcomes["params_b"].nunique() >= 2 else NO_TERMS


def complexity_not_identifiable(outcomes: pd.DataFrame,
                                tolerance: float = COMPLEXITY_TOLERANCE) -> str | None:
    """A sentence saying why complexity cannot be identified when no dataset's C spreads by
    ``tolerance`` or more (relative to its median); None when one does."""
    spreads = complexity_spreads(outcomes)
    if not spreads or any(s.relative >= tolerance for s in spreads):
        return None
    where = "; ".join(f"{s.dataset}: C {s.low:.4f}–{s.high:.4f}, relative spread "
                      f"{100 * s.relative:.2f} %" for s in spreads)
    return (
        f"complexity is not identifiable here: within each dataset C varies by less than the "
        f"{100 * tolerance:g} % tolerance ({where}), so a complexity coefficient moves the "
        "prediction by almost nothing and the search bounds, not the data, would fix it. "
        f"Reported: the {_described(fallback_model(outcomes))}. Outcomes whose policies differ "
        "in complexity are needed to say how correctness depends on it."
    )


def bounds_note(fit: ScalingFit, fallback: str) -> str | None:
    """A sentence naming the parameters of ``fit`` that ended on a search bound; None when
    none did."""
    if not fit.at_bounds:
        return None
    named = ", ".join(f"{name} = {fit.params[name]:+.4g} (bounds {_bounds(name)})"
                      for name in fit.at_bounds)
    return (
        f"the {fit.model} fit is not trusted: {named} ended on the search bound, so the box, "
        f"not the data, chose {'it' if len(fit.at_bounds) == 1 else 'them'}. Reported: the "
        f"{_described(fallback)}."
    )


def _bounds(name: str) -> str:
    lo, hi = GAMMA_BOUNDS if name.startswith("gamma_") else FAMILY_BOUNDS[name]
    return f"[{lo:g}, {hi:g}]"


def _described(model: str) -> str:
    return ("size-only model, logit P = gamma_d + a ln N" if model == SIZE_ONLY
            else "intercept-only model, logit P = gamma_d (one judge size)")
