"""The dataset's saved decision threshold, for the pages that read probabilities with it
(Replay, Review, Evaluate). Page-private: it reads the store."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from store.thresholds import current_threshold, scope_name
from workbench.audit.calibration import ThresholdSetting


def dataset_setting(eng: Engine, dataset: str | None) -> tuple[int, ThresholdSetting] | None:
    """(version, setting) of the newest threshold saved for ``dataset``, or None."""
    if not dataset:
        return None
    return current_threshold(eng, scope_name("dataset", dataset))
