"""The dataset's saved decision setting, for the pages that decide verdicts with it (Replay,
Review, Evaluate). Page-private: it reads the store. A setting whose score is an activation
scorer comes with that scorer's outputs for the dataset's cases whose activations are stored
(``store.verdicts.case_scores``), computed once per setting version and stored-feature count.
Which setting a dataset is decided under is ``store.verdicts.dataset_setting``'s to say; this
is its cached form."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from store.activations import feature_count
from store.verdicts import case_scores, saved_setting
from workbench.decision import DecisionSetting
from workbench.decision.apply import scorer_layer


def dataset_setting(eng: Engine, dataset: str | None) -> tuple[int, DecisionSetting] | None:
    """(version, setting) of the newest setting saved for ``dataset``, or None."""
    found = saved_setting(eng, dataset)
    if found is None or dataset is None:
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
    found = saved_setting(eng, dataset)
    if found is None or found[0] != version:
        return {}
    return case_scores(eng, dataset, found[1])
