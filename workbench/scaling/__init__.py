"""Complexity-aware scaling analysis of judge correctness, and scaling-guided distillation.

Typical use::

    from workbench.scaling import load_outcomes, analyse_scaling, AnalysisOptions
    report = analyse_scaling(load_outcomes("outcomes.csv"), AnalysisOptions(bootstrap=1000))
    report.to_json()["selected"]

Modules: ``outcomes`` (table loading/validation), ``laws`` (the law families a fit chooses
among), ``fit`` (MLE), ``crossval`` (grouped CV, one-SE rule, leave-one-scale-out),
``bootstrap`` (session bootstrap), ``gains``, ``figure`` (plotly), ``distill`` (sample
selection), ``simulate``.
"""

from workbench.scaling.analysis import AnalysisOptions, ScalingReport, analyse_scaling
from workbench.scaling.bootstrap import (
    DEFAULT_REFIT,
    REFIT_MODES,
    BootstrapResult,
    bootstrap_intervals,
    percentile_intervals,
    session_bootstrap_weights,
)
from workbench.scaling.crossval import (
    CrossValidation,
    calibration_error,
    clustered_mean_se,
    cross_validate,
    leave_one_scale_out,
    one_se_select,
    session_folds,
    session_keys,
)
from workbench.scaling.distill import (
    DistillationSelection,
    SelectionError,
    build_prompt,
    load_cases,
    recovery,
    recovery_rows,
    select_distillation,
    stratum_quotas,
    training_records,
    write_training_sets,
)
from workbench.scaling.figure import (
    complexity_bins,
    complexity_figure,
    observed_bins,
    scaling_figure,
    wilson_interval,
)
from workbench.scaling.fit import FitError, FitOptions, Problem, ScalingFit, fit_model, log_loss
from workbench.scaling.gains import (
    DEFAULT_REFERENCE_B,
    GainGrid,
    complexity_quantiles,
    derived_quantities,
    gain,
    gain_table,
)
from workbench.scaling.laws import LAWS, SIMPLICITY_ORDER, SINGLE_SIZE_ORDER, get_law
from workbench.scaling.outcomes import (
    REQUIRED_COLUMNS,
    OutcomesError,
    load_outcomes,
    outcomes_format,
    outcomes_from_records,
    read_outcomes,
)
from workbench.scaling.simulate import simulate_outcomes, true_probability

__all__ = [
    "AnalysisOptions",
    "BootstrapResult",
    "CrossValidation",
    "DEFAULT_REFERENCE_B",
    "DistillationSelection",
    "FitError",
    "FitOptions",
    "GainGrid",
    "LAWS",
    "OutcomesError",
    "Problem",
    "DEFAULT_REFIT",
    "REFIT_MODES",
    "REQUIRED_COLUMNS",
    "SIMPLICITY_ORDER",
    "SINGLE_SIZE_ORDER",
    "ScalingFit",
    "ScalingReport",
    "SelectionError",
    "analyse_scaling",
    "bootstrap_intervals",
    "build_prompt",
    "calibration_error",
    "clustered_mean_se",
    "complexity_quantiles",
    "cross_validate",
    "derived_quantities",
    "fit_model",
    "gain",
    "gain_table",
    "get_law",
    "leave_one_scale_out",
    "load_cases",
    "load_outcomes",
    "log_loss",
    "complexity_bins",
    "complexity_figure",
    "observed_bins",
    "one_se_select",
    "outcomes_format",
    "outcomes_from_records",
    "percentile_intervals",
    "read_outcomes",
    "recovery",
    "recovery_rows",
    "scaling_figure",
    "select_distillation",
    "session_bootstrap_weights",
    "session_folds",
    "session_keys",
    "simulate_outcomes",
    "stratum_quotas",
    "training_records",
    "true_probability",
    "wilson_interval",
    "write_training_sets",
]
