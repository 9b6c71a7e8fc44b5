"""The whole scaling analysis in one call: fit every family, cross-validate and select,
bootstrap intervals, leave-one-scale-out, and gains. What the CLI and the page show.

Outcomes of a single judge size cannot identify any scale term. Rather than refuse them, the
analysis then compares the size-free ``intercept`` and ``complexity`` families: the question
one judge can answer is whether it gets complex cases wrong more often.

Outcomes whose complexity hardly varies cannot identify a complexity term either, and a fit
whose coefficient ends on a search bound was chosen by the box: the analysis then says so in
its notes and reports the size-only model (``workbench.scaling.identify``). Gains G_b are
only taken against a judge size that was run."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.scaling.bootstrap import (
    DEFAULT_REFIT,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    BootstrapResult,
    bootstrap_intervals,
)
from workbench.scaling.crossval import (
    CrossValidation,
    cross_validate,
    leave_one_scale_out,
    one_se_select,
)
from workbench.scaling.fit import FitOptions, ScalingFit, fit_model, single_threaded_blas
from workbench.scaling.gains import GainGrid, derived_quantities, gain_table
from workbench.scaling.identify import bounds_note, complexity_not_identifiable, fallback_model
from workbench.scaling.laws import SIMPLICITY_ORDER, SINGLE_SIZE_ORDER

SINGLE_SIZE_NOTE = (
    "The outcomes hold one judge size, so no scale term can be estimated: the size-free "
    "intercept and complexity models are compared instead (does correctness fall with "
    "complexity for this judge?). Add outcomes of a second judge size for the scaling fit."
)


@dataclass(frozen=True)
class AnalysisOptions:
    """Settings of :func:`analyse_scaling`; the defaults are the documented method."""

    # None: full/nested/additive when the outcomes hold two or more judge sizes, else the
    # size-free intercept/complexity families.
    models: tuple[str, ...] | None = None
    folds: int = 5
    bootstrap: int = DEFAULT_REPLICATES
    seed: int = DEFAULT_SEED
    level: float = 0.95
    # The judge size gains are taken against; None: the smallest size run. A size that was
    # not run is not extrapolated to: the smallest run size is used and a note says so.
    reference_b: float | None = None
    loso: bool = True
    fit: FitOptions = field(default_factory=FitOptions)
    refit: str = DEFAULT_REFIT  # how bootstrap replicates are refitted (bootstrap.REFIT_MODES)


@dataclass
class ScalingReport:
    """Results of :func:`analyse_scaling`."""

    fits: dict[str, ScalingFit]
    cv: dict[str, CrossValidation]
    selected: str
    bootstrap: dict[str, BootstrapResult]
    loso: list[dict]
    grid: GainGrid
    n_rows: int
    notes: list[str] = field(default_factory=list)
    # True when ``selected`` is the size-only (or intercept) model reported because complexity
    # could not be identified (see ``notes``), not the one-SE rule's choice.
    fallback: bool = False

    @property
    def single_size(self) -> bool:
        """True when no fitted family uses the judge size (one size in the data)."""
        return not any(f.family.uses_size for f in self.fits.values())

    def comparison_table(self) -> pd.DataFrame:
        """One row per model: parameter count, log-likelihood, CV log loss and SE."""
        best = min(r.cv_logloss for r in self.cv.values())
        rows = []
        for name, fit in self.fits.items():
            cv = self.cv[name]
            rows.append(
                {
                    "model": name,
                    "n_params": fit.n_params,
                    "loglik": fit.loglik,
                    "cv_logloss": cv.cv_logloss,
                    "cv_se": cv.cv_se,
                    "delta_vs_best": cv.cv_logloss - best,
                    "selected": name == self.selected,
                }
            )
        return pd.DataFrame(rows)

    def intervals_table(self, model: str) -> pd.DataFrame:
        """Estimate and interval of each parameter and derived quantity of ``model``."""
        fit = self.fits[model]
        estimates = fit.params | derived_quantities(fit, self.grid)
        ci = self.bootstrap[model].intervals if model in self.bootstrap else {}
        return pd.DataFrame(
            [
                {
                    "quantity": k,
                    "estimate": v,
                    "ci_low": ci.get(k, (math.nan, math.nan))[0],
                    "ci_high": ci.get(k, (math.nan, math.nan))[1],
                }
                for k, v in estimates.items()
            ]
        )

    def gains(self, model: str | None = None) -> pd.DataFrame:
        return gain_table(self.fits[model or self.selected], self.grid)

    def to_json(self) -> dict[str, Any]:
        """``{"selected", "models": {name: {"params", "cv_logloss", "cv_se", "ci", ...}},
        "loso": [...]}`` plus the gains of the selected model and the settings used."""
        models = {}
        for name, fit in self.fits.items():
            boot = self.bootstrap.get(name)
            models[name] = {
                "params": fit.params,
                "cv_logloss": _finite(self.cv[name].cv_logloss),
                "cv_se": _finite(self.cv[name].cv_se),
                "ci": {k: [lo, hi] for k, (lo, hi) in (boot.intervals if boot else {}).items()},
                "n_params": fit.n_params,
                "loglik": fit.loglik,
                "c_median": fit.c_median,
                "at_bounds": fit.at_bounds,
                "derived": derived_quantities(fit, self.grid),
                "bootstrap_replicates": int(boot.draws.shape[0]) if boot else 0,
                "bootstrap_failed": boot.failed if boot else 0,
                "bootstrap_refit": boot.refit if boot else None,
            }
        return _json_safe(
            {
                "selected": self.selected,
                "models": models,
                "loso": self.loso,
                "gains": self.gains().to_dict(orient="records"),
                "reference_params_b": self.grid.reference,
                "n_rows": self.n_rows,
                "judge_sizes": list(self.grid.sizes),
                "notes": self.notes,
                "fallback": self.fallback,
            }
        )


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _json_safe(value: Any) -> Any:
    """Plain JSON types throughout; NaN/inf become None (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _finite(float(value))
    return value


@single_threaded_blas()
def analyse_scaling(
    outcomes: pd.DataFrame,
    options: AnalysisOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> ScalingReport:
    """Run the scaling analysis on a validated outcomes table.

    Fits each family on all rows, selects by session-grouped K-fold CV and the one-SE rule,
    bootstraps sessions for ``options.bootstrap`` replicates (0 skips it), and runs
    leave-one-scale-out. ``progress(message)`` reports each stage.
    Raises ``FitError``/``ValueError`` when the data cannot support the analysis.
    """
    options = options or AnalysisOptions()
    say = progress or (lambda _m: None)
    models = options.models or default_models(outcomes)
    notes = [SINGLE_SIZE_NOTE] if outcomes["params_b"].nunique() < 2 else []
    fallback = fallback_model(outcomes)
    flat = complexity_not_identifiable(outcomes) if options.models is None else None
    if flat:
        notes.append(flat)
        models = (fallback,)
    say("fitting models on all rows")
    fits = {m: fit_model(outcomes, m, options.fit) for m in models}
    say(f"{options.folds}-fold session-grouped cross-validation")
    cv = cross_validate(outcomes, models, k=options.folds, options=options.fit, seed=options.seed)
    selected = one_se_select(cv)
    boxed = bounds_note(fits[selected], fallback) if options.models is None else None
    if boxed:
        notes.append(boxed)
        if selected != fallback:
            say(f"fitting the {fallback} model")
            fits[fallback] = fit_model(outcomes, fallback, options.fit)
            cv |= cross_validate(outcomes, (fallback,), k=options.folds, options=options.fit,
                                 seed=options.seed)
            selected = fallback
    grid, reference_note = _gain_grid(outcomes, options.reference_b)
    notes += [reference_note] if reference_note else []
    boot: dict[str, BootstrapResult] = {}
    if options.bootstrap > 0:
        say(f"session bootstrap, {options.bootstrap} replicates")
        boot = bootstrap_intervals(
            outcomes,
            fits,
            lambda f: derived_quantities(f, grid),
            n_replicates=options.bootstrap,
            seed=options.seed,
            level=options.level,
            options=options.fit,
            refit=options.refit,
        )
    loso: list[dict] = []
    if options.loso and outcomes["params_b"].nunique() >= 3:
        say("leave-one-scale-out")
        loso = leave_one_scale_out(outcomes, models, options=options.fit)
    return ScalingReport(fits, cv, selected, boot, loso, grid, len(outcomes), notes,
                         fallback=bool(flat or boxed))


def _gain_grid(outcomes: pd.DataFrame, reference: float | None) -> tuple[GainGrid, str | None]:
    """The gain grid against ``reference`` when that size was run, else against the smallest
    size run, with a note saying so (gains are never taken against an extrapolated judge)."""
    sizes = sorted(float(s) for s in outcomes["params_b"].unique())
    if reference is None or reference in sizes:
        return GainGrid.from_outcomes(outcomes, reference), None
    note = (f"no judge of {reference:g}B was run, so gains are taken against the smallest judge "
            f"run, {sizes[0]:g}B (sizes run: {', '.join(f'{s:g}B' for s in sizes)}), not "
            "against a size the fit would extrapolate to")
    return GainGrid.from_outcomes(outcomes, sizes[0]), note


def default_models(outcomes: pd.DataFrame) -> tuple[str, ...]:
    """The families the data can support: the scaling families with two or more judge sizes,
    the size-free ones with one."""
    return SIMPLICITY_ORDER if outcomes["params_b"].nunique() >= 2 else SINGLE_SIZE_ORDER
