"""From a case's scores to a decision: the judge's features, the scorers learned from
labelled cases, monotone calibration, the error-rate guarantee and the one decision rule."""
