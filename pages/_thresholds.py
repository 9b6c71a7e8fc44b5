"""The dataset's saved decision setting, for the pages that decide verdicts with it (Replay,
Review, Evaluate). Page-private: it reads the store. A setting whose score is an activation
scorer comes with that scorer's outputs for the dataset's cases whose activations are stored
(``store.activations``), computed once per setting version and stored-feature count."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from store.activations import feature_count, layer_vectors
from store.thresholds import current_threshold, scope_name
from workbench.decision import DecisionSetting
from workbench.decision.apply import scorer_layer, with_scores


def dataset_setting(eng: Engine, dataset: str | None) -> tuple[int, DecisionSetting] | None:
    """(version, setting) of the newest setting saved for ``dataset``, or None."""
    if not dataset:
        return None
    found = current_threshold(eng, scope_name("dataset", dataset))
    if found is None:
        return None
    version, setting = found
    layer = scorer_layer(setting)
    if layer is None:
        return found
    scores = _scores(str(eng.url), dataset, version, feature_count(eng, dataset), layer)
    return version, DecisionSetting(**{**vars(setting), "case_scores": scores})


@st.cache_data(max_entries=16, show_spinner=False)
def _scores(url: str, dataset: str, version: int, count: int, layer: int) -> dict:
    from store.db import make_engine

    eng = make_engine(url)
    found = current_threshold(eng, scope_name("dataset", dataset))
    if found is None or found[0] != version:
        return {}
    from store.audit_repo import latest_traces

    verbal = {(t.id, t.strategy): t.verdict.probability if t.verdict else None
              for t in latest_traces(eng, dataset).values()}  # a combined scorer reads them
    scored = with_scores(found[1], layer_vectors(eng, dataset, layer), verbal)
    return dict(scored.case_scores) if scored is not None else {}
