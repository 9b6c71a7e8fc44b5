"""Where the judge decides: from a case's score to a decision, and the decided record every
surface reads.

    from workbench.decision import DecisionSetting, decide, decided_verdict

- ``_decide``: :class:`DecisionSetting` (saved per dataset or policy), :func:`decide` (the
  one rule), :func:`judgement` (a trace or verdict read through a setting), ``violates``;
- ``_calibration``: :class:`Monotone` calibration (slope never negative), ``fit_monotone``;
- ``_fit``: one fit path for every score — the verbal probability as a one-feature scorer
  (:func:`fit_verbal_setting`) and the activation scorers (:func:`fit_activation_setting`);
  ``out_of_fold`` figures;
- ``_guarantee``: auto-decide with a guaranteed error rate (learn-then-test);
- ``_measures``: right and wrong counted once (:class:`Counts`), reliability, risk–coverage;
- ``_labelled``: labelled cases (:class:`Scored`), an analyst's label over a gold one;
- ``_report``: the calibration report the pictures are drawn from;
- ``_selective``: most doubtful first, auto-decide previews;
- ``_verdict``: the decided record of a case (:class:`DecidedVerdict`, built by
  :func:`decided_verdict` only; :func:`setting_for` chooses the setting that applies), what
  every surface reads;
- ``_prior``: the built-in activation scorer that decides a dataset with no saved setting
  (:func:`default_setting`), and the adaptation from it as labels arrive (:func:`adapt`);
- ``_labelling``: which cases to label next (:func:`propose`) and how many labels a promise
  needs (:func:`labels_needed`); a guarantee certified on a split (:func:`split_guarantee`);
- ``features``, ``scorers``, ``learn``, ``apply``: the judge's activations kept beside a run,
  the scorers learned from them (``learn.auroc`` and ``learn.grouped_splits`` are the one
  AUROC and the one grouped fold splitter), and a saved scorer applied to other traces.

Inside the package, modules import each other by module, never through this face.
"""

from workbench.decision._calibration import MIN_PER_ANSWER, Monotone, fit_monotone
from workbench.decision._decide import (
    DEFAULT_SETTING,
    DEFAULT_THRESHOLD,
    MIN_RANKING_AUROC,
    Decided,
    DecisionSetting,
    Outcome,
    ScoreSource,
    confidence_of,
    cost_threshold,
    decide,
    judgement,
    violates,
    violates_each,
)
from workbench.decision._fit import (
    OutOfFold,
    add_verbal_guarantee,
    figures,
    fit_activation_setting,
    fit_adapted_setting,
    fit_verbal_setting,
    guarantee_dict,
    out_of_fold,
)
from workbench.decision._guarantee import (
    DEFAULT_DELTA,
    GRID,
    Guarantee,
    binom_pvalue,
    choose_level,
    realised,
    smallest_testable,
    upper_bound,
)
from workbench.decision._labelled import (
    ACTIVATION_SCORER,
    JUDGES_WORDS,
    Scored,
    reviewed_truth,
    score_aurocs,
    scored_traces,
)
from workbench.decision._labelling import (
    Candidate,
    Forecast,
    auto_cases_needed,
    labels_needed,
    propose,
    split_guarantee,
)
from workbench.decision._measures import (
    Counts,
    accuracy_at_coverage,
    best_threshold,
    counts,
    reliability,
    risk_coverage,
    threshold_curve,
)
from workbench.decision._prior import (
    BUILTIN_VERSION,
    Adapted,
    adapt,
    builtin_about,
    builtin_layer,
    builtin_setting,
    default_setting,
    fit_prior_probe,
)
from workbench.decision._report import REPORT_KIND, calibration_report
from workbench.decision._selective import AutoDecidePreview, auto_decide_preview, order_by_uncertainty
from workbench.decision._verdict import (
    ACTIVATIONS,
    BY_EXPLAIN,
    BY_JUDGE,
    BY_WORKBENCH,
    COMPLIANT,
    JUDGE,
    LABELS,
    REVIEW,
    VIOLATION,
    DecidedVerdict,
    Explanation,
    ReviewState,
    decided_verdict,
    decided_verdicts,
    says_complies,
    setting_for,
)
from workbench.decision.learn import DEFAULT_FOLDS, auroc, grouped_splits

__all__ = [
    "BUILTIN_VERSION", "Adapted", "adapt", "builtin_about", "builtin_layer", "builtin_setting",
    "default_setting", "fit_prior_probe",
    "Candidate", "Forecast", "auto_cases_needed", "labels_needed", "propose", "split_guarantee",
    "ACTIVATION_SCORER", "JUDGES_WORDS", "score_aurocs",
    "ACTIVATIONS", "BY_EXPLAIN", "BY_JUDGE", "BY_WORKBENCH", "COMPLIANT", "JUDGE", "LABELS",
    "REVIEW", "VIOLATION", "DecidedVerdict",
    "Explanation", "ReviewState", "decided_verdict", "decided_verdicts", "says_complies",
    "setting_for",
    "DEFAULT_DELTA", "DEFAULT_FOLDS", "DEFAULT_SETTING", "DEFAULT_THRESHOLD", "GRID",
    "MIN_PER_ANSWER", "MIN_RANKING_AUROC", "REPORT_KIND", "AutoDecidePreview", "Counts",
    "Decided", "DecisionSetting", "Guarantee", "Monotone", "OutOfFold", "Outcome",
    "ScoreSource", "Scored", "accuracy_at_coverage", "add_verbal_guarantee", "auroc",
    "auto_decide_preview", "best_threshold", "binom_pvalue", "calibration_report",
    "choose_level", "confidence_of", "cost_threshold", "counts", "decide", "figures",
    "fit_activation_setting", "fit_adapted_setting", "fit_monotone", "fit_verbal_setting", "grouped_splits",
    "guarantee_dict", "judgement", "order_by_uncertainty", "out_of_fold", "realised",
    "reliability", "reviewed_truth", "risk_coverage", "scored_traces", "smallest_testable",
    "threshold_curve", "upper_bound", "violates", "violates_each",
]
