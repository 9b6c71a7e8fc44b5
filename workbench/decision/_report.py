"""The calibration report of a dataset's verbal probability: the saved setting
(``_fit.fit_verbal_setting``) with the data its pictures are drawn from — reliability before
and after calibration, precision/recall/F1 against the threshold, risk against coverage —
as plain JSON-able data (also what ``workbench calibrate --json`` writes). The pictures
themselves are ``workbench.audit.calibration_figures``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.decision._fit import fit_verbal_setting, out_of_fold
from workbench.decision._labelled import Scored
from workbench.decision._measures import counts, reliability, risk_coverage, threshold_curve
from workbench.decision.learn import DEFAULT_FOLDS
from workbench.decision.scorers import logit

REPORT_KIND = "calibration"


def calibration_report(scored: Sequence[Scored], bare: Sequence[bool], folds: int = DEFAULT_FOLDS,
                       **about: Any) -> dict[str, Any]:
    """Everything the figures and the saved setting need (see the module doc)."""
    setting = fit_verbal_setting(scored, folds, bare=bare, **about)
    probabilities = [s.probability for s in scored]
    truth = [s.violation for s in scored]
    oof = out_of_fold([logit(p) for p in probabilities], truth,
                      [s.group or s.case_id for s in scored], setting.threshold, folds)
    return {
        "kind": REPORT_KIND,
        "setting": setting.to_dict(),
        "bare": counts(list(bare), truth).__dict__,
        "reliability_raw": reliability(probabilities, truth),
        "reliability_calibrated_out_of_fold": reliability(list(oof.q), truth),
        "threshold_curve": threshold_curve(probabilities, truth),
        "risk_coverage_out_of_fold": risk_coverage(list(oof.confidences), list(oof.correct)),
        "cases": [{"id": s.case_id, "group": s.group, "probability": s.probability,
                   "violation": s.violation} for s in scored],
    }
