"""Gains from judge scale at low and high complexity.

G_b(C, d) = P_b(C, d) - P_ref(C, d), with the reference judge size ``ref`` one that was run
(default: the smallest; the first paper's 2B when a 2B judge was run), and
Delta G_b(d) = G_b(Q_C(0.9), d) - G_b(Q_C(0.1), d) with Q_C the complexity quantiles of
dataset d's instances. A positive Delta G means the larger judge helps more on complex cases.

Every table also carries the complexity effect at each size, P(Q_C(0.9)) - P(Q_C(0.1)): how
much correctness a judge loses from simple to complex cases. For a size-free model (outcomes
of one judge size) that is the only comparison there is; its gains are left empty (NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.scaling.fit import ScalingFit

DEFAULT_REFERENCE_B = 2.0
LOW_Q, HIGH_Q = 0.1, 0.9


def complexity_quantiles(
    outcomes: pd.DataFrame, quantiles: tuple[float, ...] = (LOW_Q, HIGH_Q)
) -> dict[str, tuple[float, ...]]:
    """Per dataset, the complexity quantiles over its instances (each instance once)."""
    instances = outcomes.drop_duplicates(["dataset", "instance"])
    return {
        str(d): tuple(float(np.quantile(g["complexity"], q)) for q in quantiles)
        for d, g in instances.groupby("dataset", sort=True)
    }


@dataclass(frozen=True)
class GainGrid:
    """Where gains are evaluated: judge sizes, the reference size and, per dataset, the
    complexities at the low and high quantiles. Fixed from the full data so bootstrap
    replicates estimate the same quantities."""

    sizes: tuple[float, ...]
    reference: float
    complexity: dict[str, tuple[float, float]]

    @classmethod
    def from_outcomes(
        cls,
        outcomes: pd.DataFrame,
        reference: float | None = None,
        sizes: tuple[float, ...] | None = None,
    ) -> GainGrid:
        """The grid of ``outcomes``; ``reference`` must be a judge size that was run (None:
        the smallest). Raises ValueError for a size not run: a gain against a judge nobody
        ran would be the fit's extrapolation, not a measurement."""
        run = tuple(float(s) for s in sorted(outcomes["params_b"].unique()))
        if reference is not None and reference <= 0:
            raise ValueError(f"the reference judge size must be > 0 (billions), got {reference}")
        if reference is None:
            reference = run[0]
        elif float(reference) not in run:
            raise ValueError(
                f"no judge of {reference:g}B was run; gains are taken against a judge size that "
                f"was: choose one of {', '.join(f'{s:g}' for s in run)}")
        return cls(tuple(sizes or run), float(reference), complexity_quantiles(outcomes))


def gain(fit: ScalingFit, dataset, params_b, complexity, reference: float = DEFAULT_REFERENCE_B):
    """G_b(C, d) = P_b(C, d) - P_ref(C, d), broadcast over array arguments."""
    return fit.predict(dataset, params_b, complexity) - fit.predict(dataset, reference, complexity)


def gain_table(fit: ScalingFit, grid: GainGrid) -> pd.DataFrame:
    """One row per (dataset, size): the complexities at Q(0.1) and Q(0.9), P and G at both,
    Delta G, and the complexity effect P(q90) - P(q10)."""
    sized = fit.family.uses_size
    rows = []
    for dataset, (c_low, c_high) in grid.complexity.items():
        if dataset not in fit.datasets:
            continue
        for size in grid.sizes:
            p_low, p_high = fit.predict(dataset, size, [c_low, c_high])
            r_low, r_high = fit.predict(dataset, grid.reference, [c_low, c_high])
            rows.append(
                {
                    "dataset": dataset,
                    "params_b": size,
                    "c_q10": c_low,
                    "c_q90": c_high,
                    "p_q10": float(p_low),
                    "p_q90": float(p_high),
                    "complexity_effect": float(p_high - p_low),
                    "gain_q10": float(p_low - r_low) if sized else np.nan,
                    "gain_q90": float(p_high - r_high) if sized else np.nan,
                    "delta_gain": float((p_high - r_high) - (p_low - r_low)) if sized else np.nan,
                }
            )
    return pd.DataFrame(rows)


def derived_quantities(fit: ScalingFit, grid: GainGrid) -> dict[str, float]:
    """Flat named quantities for intervals: ``p_<d>_<b>B_q10|q90``,
    ``complexity_effect_<d>_<b>B``, ``gain_<d>_<b>B_q10|q90`` and ``delta_gain_<d>_<b>B``
    (gains omitted for the reference size itself, where they are 0, and for size-free models)."""
    out: dict[str, float] = {}
    for row in gain_table(fit, grid).to_dict(orient="records"):
        stem = f"{row['dataset']}_{row['params_b']:g}B"
        out[f"p_{stem}_q10"] = row["p_q10"]
        out[f"p_{stem}_q90"] = row["p_q90"]
        if fit.family.uses_complexity:  # else 0 by construction: no interval to report
            out[f"complexity_effect_{stem}"] = row["complexity_effect"]
        if fit.family.uses_size and row["params_b"] != grid.reference:
            out[f"gain_{stem}_q10"] = row["gain_q10"]
            out[f"gain_{stem}_q90"] = row["gain_q90"]
            if fit.family.uses_complexity:  # else 0 by construction
                out[f"delta_gain_{stem}"] = row["delta_gain"]
    return out
