"""Cached reads of stored cases and traces for the audit pages (Review, Replay, Evaluate);
page-side, like the `_annotate_*` sections, because it talks to the store.

A keyboard-driven page reruns on every key press; reading and validating 1,000 stored traces,
their cases and the policy index each time made a key press cost what a page load does. The
reads here are cached per process and keyed by a *data version* (row count and newest row id,
``store.audit_repo.trace_version``/``case_version``: two indexed queries), so a trace stored
by this page, another tab or the CLI shows at the next rerun without any explicit clearing.
Cases saved again under their ids change in place, which the version does not see: pages
that save cases call :func:`clear` afterwards.

``st.cache_resource`` rather than ``st.cache_data``: the values are shared, not copied (a
copy of 1,000 traces per rerun would cost most of what the cache saves), so callers must
treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from components.case_table import CASE_COLUMNS, HIDDEN_TEXT, picker_rows
from store import audit_repo
from store.explanations import explanation_version, explanations_for
from store.review import decisions_for
from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace
from workbench.decision import DecidedVerdict, decided_verdicts

Record = tuple[str, AuditTrace]
Key = tuple[str, str, str]  # (run, case, strategy)


@st.cache_resource(show_spinner=False, max_entries=8)
def _cases(url: str, dataset: str, version: tuple[int, int], _engine: Engine) -> dict[str, AuditCase]:
    return {c.id: c for c in audit_repo.load_cases(_engine, dataset)}


@st.cache_resource(show_spinner=False, max_entries=8)
def _records(url: str, dataset: str, runs: tuple[str, ...] | None, version: tuple[int, int],
             _engine: Engine) -> list[Record]:
    return audit_repo.run_traces(_engine, dataset, runs)


def versions(engine: Engine, dataset: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(trace version, case version)`` of a dataset: a key for anything derived from both."""
    return audit_repo.trace_version(engine, dataset), audit_repo.case_version(engine, dataset)


def cases(engine: Engine, dataset: str, version: tuple[int, int] | None = None) -> dict[str, AuditCase]:
    """The dataset's stored cases by id, in stored order (shared: do not modify).
    ``version``: the case version already read (:func:`versions`), to key on the same one."""
    return _cases(str(engine.url), dataset, version or audit_repo.case_version(engine, dataset),
                  engine)


def records(engine: Engine, dataset: str, runs: Sequence[str] | None = None,
            version: tuple[int, int] | None = None) -> list[Record]:
    """``(run_id, trace)`` of the dataset's stored traces (of ``runs`` only, when given),
    oldest first (shared: do not modify). ``version``: the trace version already read."""
    return _records(str(engine.url), dataset, None if runs is None else tuple(runs),
                    version or audit_repo.trace_version(engine, dataset), engine)


def case_traces(engine: Engine, dataset: str, case_id: str, run_id: str | None = None,
                prefer_judged: bool = False) -> dict[str, AuditTrace]:
    """The newest stored trace per strategy of one case (of ``run_id`` only, when given).
    ``prefer_judged``: the newest trace *with a verdict* when there is one, so a later
    contexts-only run (judge "none") does not show "not judged" over a judged trace."""
    out: dict[str, AuditTrace] = {}
    for run, t in records(engine, dataset):
        if t.id != case_id or (run_id is not None and run != run_id):
            continue
        if prefer_judged and t.verdict is None and t.strategy in out \
                and out[t.strategy].verdict is not None:
            continue
        out[t.strategy] = t
    return out


def newer_unjudged(engine: Engine, dataset: str, case_id: str, shown: AuditTrace) -> str | None:
    """The run of a trace of the same case and strategy stored after ``shown`` that has no
    verdict (so :func:`case_traces` passed it over), or ``None``."""
    found, after = None, False
    for run, t in records(engine, dataset):
        if t is shown:
            after = True
        elif after and t.id == case_id and t.strategy == shown.strategy and t.verdict is None:
            found = run
    return found


@st.cache_resource(show_spinner=False, max_entries=8)
def _verdicts(url: str, dataset: str, stamp: tuple, _engine: Engine, _saved) -> dict[Key, DecidedVerdict]:
    decisions = decisions_for(_engine, dataset)
    return {v.key: v for v in decided_verdicts(records(_engine, dataset, None, stamp[0]), _saved,
                                               explanations_for(_engine, dataset), decisions)}


def verdict_stamp(engine: Engine, dataset: str) -> tuple:
    """What the decided records of ``dataset`` depend on: traces, the saved setting's version,
    the stored explanations and the review decisions (each a count and a newest id)."""
    from pages._thresholds import dataset_setting
    from store.review import decision_version

    saved = dataset_setting(engine, dataset)
    return (audit_repo.trace_version(engine, dataset), saved[0] if saved else None,
            explanation_version(engine, dataset), decision_version(engine, dataset))


def verdicts(engine: Engine, dataset: str, stamp: tuple | None = None) -> dict[Key, DecidedVerdict]:
    """The decided record of every stored trace of ``dataset`` by (run, case, strategy)
    (``workbench.decision.decided_verdicts`` under the dataset's setting, with the stored
    explanations and review decisions), built once per :func:`verdict_stamp`. Shared: do not
    modify. Every page's card, list and table reads these."""
    from pages._thresholds import dataset_setting

    stamp = stamp or verdict_stamp(engine, dataset)
    return _verdicts(str(engine.url), dataset, stamp, engine, dataset_setting(engine, dataset))


@st.cache_resource(show_spinner=False, max_entries=8)
def _picker(url: str, dataset: str, versions: tuple, _engine: Engine) -> pd.DataFrame:
    found = cases(_engine, dataset, versions[1])
    rows = picker_rows(dataset, list(found), records(_engine, dataset, None, versions[0]),
                       {i: c.label for i, c in found.items()}, verdicts(_engine, dataset, versions[2]))
    frame = pd.DataFrame(rows, columns=list(CASE_COLUMNS))
    frame[HIDDEN_TEXT] = [found[r["case"]].said for r in rows]  # searched, never shown
    return frame


def picker_frame(engine: Engine, dataset: str) -> pd.DataFrame:
    """Replay's case list (``components.case_table.picker_rows``) with each case's
    conversation as searchable text, built once per data version (1,000 cases cost ~75 ms
    a rerun otherwise). Shared: do not modify."""
    return _picker(str(engine.url), dataset,
                   (*versions(engine, dataset), verdict_stamp(engine, dataset)), engine)


def clear() -> None:
    """Forget cached cases and traces (after saving cases under ids already stored)."""
    _cases.clear()
    _records.clear()
    _picker.clear()
    _verdicts.clear()
