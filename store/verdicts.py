"""A stored dataset's decided verdicts (``workbench.decision.DecidedVerdict``), read once for
every face that is not a page: ``workbench verdicts``, ``metrics``, exports, alerts, the CI
gate, the API. The pages read the same through their caches (``pages/_thresholds``,
``pages/_audit_cache``), which call these functions.

:func:`dataset_setting` is the one place that says which saved setting a dataset's cases are
decided under, with its activation scorer's outputs attached for the cases whose activations
are stored (``store.activations``); per trace, ``workbench.decision.setting_for`` then says
whether it applies. Reads only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy.engine import Engine

from store import audit_repo
from store.activations import holds_feature, layer_vectors
from store.explanations import explanations_for
from store.review import decisions_for
from store.thresholds import current_threshold, scope_name
from workbench.audit.trace import AuditTrace, case_and_strategy, latest_per_case
from workbench.decision import DecidedVerdict, DecisionSetting, decided_verdicts, default_setting
from workbench.decision.apply import scorer_layer, with_scores

Key = tuple[str, str, str]  # (run, case, strategy)
Saved = tuple[int, DecisionSetting]


def case_scores(engine: Engine, dataset: str, setting: DecisionSetting,
                traces: Iterable[AuditTrace] | None = None) -> dict[tuple[str, str], float]:
    """(case id, strategy) -> the setting's activation scorer output, for the cases of
    ``dataset`` whose activations are stored; empty for a setting without a scorer. A combined
    scorer reads the judge's probability of the newest trace per case (``traces``: those to
    read it from, default the dataset's newest)."""
    layer = scorer_layer(setting)
    if layer is None:
        return {}
    found = traces if traces is not None else audit_repo.latest_traces(engine, dataset).values()
    verbal = {(t.id, t.strategy): t.verdict.probability if t.verdict else None for t in found}
    scored = with_scores(setting, layer_vectors(engine, dataset, layer), verbal)
    return dict(scored.case_scores) if scored is not None else {}


def saved_setting(engine: Engine, dataset: str | None) -> Saved | None:
    """(version, setting) that decides ``dataset``'s cases, before any case score is attached:
    the newest setting saved for the dataset; with none saved, the built-in activation scorer
    (version 0) when the dataset's stored activations hold the feature it reads
    (``workbench.decision.default_setting``); else None (the judge's words decide). The one
    place that chooses a dataset's setting: the pages (``pages/_thresholds``) and every other
    face read it through here."""
    if not dataset:
        return None
    saved = current_threshold(engine, scope_name("dataset", dataset))
    return default_setting(saved, lambda layer: holds_feature(engine, dataset, layer))


def dataset_setting(engine: Engine, dataset: str | None) -> Saved | None:
    """:func:`saved_setting` with its activation scorer's outputs attached (:func:`case_scores`)."""
    found = saved_setting(engine, dataset)
    if found is None or dataset is None:
        return None
    version, setting = found
    scores = case_scores(engine, dataset, setting)
    if not scores:
        return found
    return version, DecisionSetting(**{**vars(setting), "case_scores": scores})


def dataset_verdicts(engine: Engine, dataset: str, runs: Sequence[str] | None = None, *,
                     latest: bool = True, saved: Saved | None | bool = True
                     ) -> list[DecidedVerdict]:
    """The decided records of ``dataset``'s stored traces (of ``runs`` only, when given): the
    newest trace per case and strategy (``latest``; else every run's newest), decided under
    the dataset's setting (``saved`` True: read it; or the (version, setting) already read),
    with the stored explanations and the review decisions."""
    records = audit_repo.run_traces(engine, dataset, list(runs) if runs else None)
    if latest:
        records = latest_per_case(records, key=lambda r: case_and_strategy(r[1]))
    else:
        records = latest_per_case(records, key=lambda r: (r[0], *case_and_strategy(r[1])))
    applied = dataset_setting(engine, dataset) if saved is True else saved or None
    return decided_verdicts(records, applied, explanations_for(engine, dataset),
                            decisions_for(engine, dataset))
