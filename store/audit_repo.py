"""Repository functions for audit cases and audit traces (``CaseRow``, ``AuditResultRow``).

Cases are stored per dataset with their full JSON (extra fields survive); saving a case id
again replaces its payload. Traces are append-only per (dataset, run, case, strategy): a
re-audit adds a row, and ``latest_traces`` picks the newest per case and strategy
(``workbench.audit.trace.latest_per_case``). Saving a trace identical to the newest stored
one of its key adds nothing, so storing a finished run again is a no-op. This is the one
repository of stored traces: they come back as ``AuditTrace`` (``load_traces``, ``latest_traces``)
or as ``(run_id, AuditTrace)`` (``run_traces``), never as dicts; ``StoreSink`` lets a batch run
write into a stored run and resume from it. Every write holds the write lock from its first
read (``write_session``):
concurrent importers and audits of one dataset neither collide nor lose rows.

Roles (issue #16): ``save_cases`` needs "import cases" and every trace write ("store audit
results") the acting ``workbench.identity.roles.Actor``, a required keyword with no default (issue
45: a forgotten ``actor=`` must fail, not write with full rights); pages pass theirs
(``components.identity.actor``), commands ``commands._common.cli_actor``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from store.core_tables import AuditResultRow, CaseRow
from store.session import retry_conflicts, where_given, write_session
from workbench.audit.cases import LABELS, AuditCase, CaseFormatError, case_from_dict
from workbench.audit.identifiers import id_problem
from workbench.audit.trace import AuditTrace, TraceFormatError, case_and_strategy, latest_per_case
from workbench.audit.trace_check import trace_problem
from workbench.audit.trace_file import encode_trace
from workbench.identity.roles import Actor, require
from workbench.inputs import dumps_utf8
from workbench.llm.errors import bound_message


def _check_case(dataset: str, case: AuditCase) -> None:
    """A case built in code is held to what a cases file may say (id, label)."""
    if bad := id_problem(case.id, "case id"):
        raise CaseFormatError(f"dataset {dataset}: {bad}; nothing was stored")
    if case.label is not None and case.label not in LABELS:
        raise CaseFormatError(f"dataset {dataset}: case {case.id!r} has the label "
                              f"{str(case.label)[:40]!r}, not one of {', '.join(LABELS)}; "
                              "nothing was stored")


def _trace_row(trace: AuditTrace, run_id: str, dataset: str) -> dict[str, Any]:
    """The row of a trace, once it is held to the words a read one is (vocabulary, id)."""
    if bad := trace_problem({k: getattr(trace, k) for k in _CHECKED_FIELDS}):
        raise TraceFormatError(f"trace of case {trace.id[:60]!r}: {bad}; nothing was stored")
    return dict(
        run_id=run_id,
        dataset=dataset,
        case_id=trace.id,
        strategy=trace.strategy,
        violation=trace.violation,
        probability=None if trace.verdict is None else trace.verdict.probability,
        error=None if trace.error is None
        else bound_message(f"{trace.error.kind}: {trace.error.message}"),
        trace_json=encode_trace(trace),  # a lone surrogate escaped: SQLite stores UTF-8 only
    )


_ID_CHUNK = 500  # ids per IN (...) query: well under SQLite's bound-parameter limit


def save_cases(engine: Engine, dataset: str, cases: Iterable[AuditCase], *,
               actor: Actor) -> int:
    """Insert or update cases of ``dataset`` by case id. Returns how many were written.
    Raises ``roles.NotAllowed`` (nothing written) when ``actor`` may not import cases."""
    require(actor, "import cases")
    chosen = list(cases)
    for case in chosen:
        _check_case(dataset, case)

    def write() -> int:
        with write_session(engine) as session:
            # Only the rows of this batch's ids: reading the whole dataset back made each
            # batch of a large import cost as much as everything stored before it.
            ids = list(dict.fromkeys(c.id for c in chosen))
            existing = {}
            for at in range(0, len(ids), _ID_CHUNK):
                existing.update({r.case_id: r for r in session.exec(
                    select(CaseRow).where(CaseRow.dataset == dataset,
                                          CaseRow.case_id.in_(ids[at:at + _ID_CHUNK]))).all()})
            for case in chosen:
                payload = dumps_utf8(case.to_dict())  # SQLite holds UTF-8 only
                row = existing.get(case.id)
                if row is None:
                    row = CaseRow(dataset=dataset, case_id=case.id)
                    existing[case.id] = row
                row.session, row.label, row.payload_json = case.session, case.label, payload
                session.add(row)
            session.commit()
        return len(chosen)

    return retry_conflicts(write)


def load_cases(engine: Engine, dataset: str) -> list[AuditCase]:
    with Session(engine) as session:
        rows = session.exec(
            select(CaseRow).where(CaseRow.dataset == dataset).order_by(CaseRow.id)
        ).all()
    return [case_from_dict(json.loads(r.payload_json), f"dataset {dataset}") for r in rows]


def datasets(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return sorted(session.exec(select(CaseRow.dataset).distinct()).all())


def save_trace(engine: Engine, trace: AuditTrace, run_id: str, dataset: str, *,
               actor: Actor) -> int:
    return save_traces(engine, [trace], run_id, dataset, actor=actor)


_CHECKED_FIELDS = ("id", "strategy", "judge_mode", "keywords_method", "label")


def save_traces(
    engine: Engine, traces: Iterable[AuditTrace], run_id: str, dataset: str, *,
    actor: Actor,
) -> int:
    """Append traces under ``run_id``. Returns how many were added: a trace equal to the
    newest stored one of its (dataset, run, case, strategy) is skipped, and so is a repeat
    within ``traces``. A JSON trace is read with ``AuditTrace.from_dict`` (or
    ``trace_file.read_traces``) first; only valid traces are stored (``TraceFormatError``
    naming the field otherwise).
    Raises ``roles.NotAllowed`` (nothing written) when ``actor`` may not store audit results."""
    require(actor, "store audit results")
    fields = [_trace_row(trace, run_id, dataset) for trace in traces]

    def write() -> int:
        with write_session(engine) as session:
            newest = {
                (case_id, strategy): text
                for case_id, strategy, text in session.exec(
                    select(AuditResultRow.case_id, AuditResultRow.strategy, AuditResultRow.trace_json)
                    .where(AuditResultRow.dataset == dataset, AuditResultRow.run_id == run_id)
                    .order_by(AuditResultRow.id)
                )
            }
            added = 0
            for f in fields:  # fresh rows per attempt: a rolled-back attempt leaves none half-made
                key = (f["case_id"], f["strategy"])
                if newest.get(key) == f["trace_json"]:
                    continue
                newest[key] = f["trace_json"]
                session.add(AuditResultRow(**f))
                added += 1
            session.commit()
            return added

    return retry_conflicts(write)


def save_case_and_trace(engine: Engine, dataset: str, case: AuditCase, trace: AuditTrace,
                        run_id: str, *, actor: Actor) -> None:
    """Store one case and its trace in one transaction (the audit API: a request's
    conversation and verdict land together or not at all). Reads only that case's row, so
    the cost does not grow with the dataset, unlike ``save_cases``."""
    require(actor, "import cases")
    require(actor, "store audit results")
    _check_case(dataset, case)
    payload = dumps_utf8(case.to_dict())
    row = _trace_row(trace, run_id, dataset)

    def write() -> None:
        with write_session(engine) as session:
            stored = session.exec(select(CaseRow).where(CaseRow.dataset == dataset,
                                                        CaseRow.case_id == case.id)).first()
            stored = stored or CaseRow(dataset=dataset, case_id=case.id)
            stored.session, stored.label, stored.payload_json = case.session, case.label, payload
            session.add(stored)
            session.add(AuditResultRow(**row))
            session.commit()

    retry_conflicts(write)


def load_case(engine: Engine, dataset: str, case_id: str) -> AuditCase | None:
    """One stored case of ``dataset`` (None when there is none)."""
    with Session(engine) as session:
        row = session.exec(select(CaseRow).where(CaseRow.dataset == dataset,
                                                 CaseRow.case_id == case_id)).first()
    return None if row is None else case_from_dict(json.loads(row.payload_json), f"dataset {dataset}")


def run_traces(
    engine: Engine,
    dataset: str | None = None,
    run_ids: Sequence[str] | None = None,
    *,
    strategy: str | None = None,
    case_id: str | None = None,
) -> list[tuple[str, AuditTrace]]:
    """``(run_id, trace)`` of the stored traces matching the filters, oldest first. A stored
    row that no longer reads as a trace (hand-edited, or from a foreign tool) is left out."""
    stmt = select(AuditResultRow.run_id, AuditResultRow.trace_json)
    if run_ids is not None:
        stmt = stmt.where(AuditResultRow.run_id.in_(list(run_ids)))
    stmt = where_given(stmt, (AuditResultRow.strategy, strategy),
                       (AuditResultRow.dataset, dataset), (AuditResultRow.case_id, case_id))
    out = []
    with Session(engine) as session:
        rows = session.exec(stmt.order_by(AuditResultRow.id)).all()
    for run_id, text in rows:
        try:
            out.append((run_id, AuditTrace.from_dict(json.loads(text), f"stored run {run_id}")))
        except (json.JSONDecodeError, TraceFormatError):
            continue
    return out


def load_traces(
    engine: Engine,
    run_id: str | None = None,
    strategy: str | None = None,
    dataset: str | None = None,
    case_id: str | None = None,
) -> list[AuditTrace]:
    """Traces filtered by run, strategy, dataset and/or case, oldest first."""
    return [t for _run, t in run_traces(engine, dataset, None if run_id is None else [run_id],
                                        strategy=strategy, case_id=case_id)]


def latest_traces(
    engine: Engine, dataset: str, strategy: str | None = None
) -> dict[tuple[str, str], AuditTrace]:
    """The newest trace per (case id, strategy) of a dataset."""
    return {case_and_strategy(t): t
            for t in latest_per_case(load_traces(engine, strategy=strategy, dataset=dataset))}


def trace_version(engine: Engine, dataset: str) -> tuple[int, int]:
    """``(rows, newest row id)`` of a dataset's stored traces: rows are only ever added, so
    this changes with every stored trace, whichever process stored it (a cache key)."""
    with Session(engine) as session:
        n, top = session.exec(select(func.count(AuditResultRow.id), func.max(AuditResultRow.id))
                              .where(AuditResultRow.dataset == dataset)).one()
    return int(n), int(top or 0)


def case_version(engine: Engine, dataset: str) -> tuple[int, int]:
    """``(rows, newest row id)`` of a dataset's cases. Saving a stored case id again updates
    its row in place, which this does not see: a page that saves cases clears its cache."""
    with Session(engine) as session:
        n, top = session.exec(select(func.count(CaseRow.id), func.max(CaseRow.id))
                              .where(CaseRow.dataset == dataset)).one()
    return int(n), int(top or 0)


def trace_datasets(engine: Engine) -> list[str]:
    """Datasets with at least one stored trace."""
    with Session(engine) as session:
        return sorted(session.exec(select(AuditResultRow.dataset).distinct()).all())


class StoreSink:
    """A batch run's sink into one stored run (``workbench.audit.sinks``): each trace is
    saved as it finishes, and the run's stored traces are what a resumed run skips."""

    def __init__(self, engine: Engine, run_id: str, dataset: str, *, actor: Actor):
        require(actor, "store audit results")  # before a batch starts, not at its first trace
        self.engine, self.run_id, self.dataset, self.actor = engine, run_id, dataset, actor
        self.added = 0

    def traces(self) -> list[AuditTrace]:
        return load_traces(self.engine, run_id=self.run_id, dataset=self.dataset)

    def write(self, trace: AuditTrace) -> None:
        self.added += save_trace(self.engine, trace, self.run_id, self.dataset, actor=self.actor)


def runs(engine: Engine, dataset: str | None = None) -> list[str]:
    stmt = where_given(select(AuditResultRow.run_id).distinct(), (AuditResultRow.dataset, dataset))
    with Session(engine) as session:
        return sorted(session.exec(stmt).all())
