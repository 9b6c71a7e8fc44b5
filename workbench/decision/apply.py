"""Scores of a saved activation scorer for the traces of a run, read from the run's features
folder (``workbench.decision.features``) — no model runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from workbench.decision._decide import DecisionSetting
from workbench.decision.features import load_features, read_index
from workbench.decision.scorers import apply, scorer_from_dict


def activation_scores(setting: DecisionSetting | None, folder: Path,
                      verbal: dict[str, float | None] | None = None,
                      ids: Sequence[str] | None = None) -> dict[str, float]:
    """Case id -> the setting's scorer output, for the cases of ``folder`` (of ``ids`` when
    given, those captured among them). Empty when the setting has no scorer. A combined
    scorer needs ``verbal`` (case id -> the judge's probability); cases without one are left
    out."""
    if setting is None or setting.scorer is None:
        return {}
    scorer = scorer_from_dict(setting.scorer)
    have = {r.case_id for r in read_index(folder)}
    wanted = [c for c in (ids if ids is not None else sorted(have)) if c in have]
    if scorer.__class__.__name__ == "Combined":
        verbal = verbal or {}
        wanted = [c for c in wanted if verbal.get(c) is not None]
    if not wanted:
        return {}
    fs = load_features(folder, ids=wanted)
    if scorer.layer not in fs.layers:
        from workbench.decision.features import FeatureFileError

        raise FeatureFileError(
            f"{folder}: the saved scorer reads layer {scorer.layer}, these features hold layers "
            f"{', '.join(map(str, fs.layers))}; capture them with the scorer's layers"
        )
    x = fs.layer(scorer.layer)
    scores = apply(scorer, x, [verbal.get(c) for c in wanted] if verbal is not None else None)
    # A case whose feature is missing (NaN: its reply was not found) stays unscored.
    return {c: float(s) for c, s in zip(wanted, scores, strict=True) if np.isfinite(s)}


def with_scores(setting: DecisionSetting | None,
                vectors: dict[tuple[str, str], np.ndarray],
                verbal: dict[tuple[str, str], float | None] | None = None) -> DecisionSetting | None:
    """``setting`` with its scorer's outputs for the cases whose ``vectors`` (of the scorer's
    layer; ``store.activations.layer_vectors``) are known attached as ``case_scores``; the
    setting itself when it has no scorer."""
    from dataclasses import replace

    import numpy as np

    if setting is None or setting.scorer is None or not vectors:
        return setting
    scorer = scorer_from_dict(setting.scorer)
    keys = list(vectors)
    if scorer.__class__.__name__ == "Combined":
        verbal = verbal or {}
        keys = [k for k in keys if verbal.get(k) is not None]
    if not keys:
        return setting
    x = np.stack([vectors[k] for k in keys])
    out = apply(scorer, x, [verbal[k] for k in keys] if verbal is not None else None)
    return replace(setting, case_scores={k: float(v) for k, v in zip(keys, out, strict=True)
                                         if np.isfinite(v)})


def scorer_layer(setting: DecisionSetting | None) -> int | None:
    """The hidden-state layer the setting's scorer reads, or None without a scorer."""
    if setting is None or setting.scorer is None:
        return None
    return scorer_from_dict(setting.scorer).layer
