"""Repository functions for audit cases and audit traces (``CaseRow``, ``AuditResultRow``).

Cases are stored per dataset with their full JSON (extra fields survive); saving a case id
again replaces its payload. Traces are append-only per (dataset, run, case, strategy): a
re-audit adds a row, and ``latest_traces`` picks the newest per case and strategy. Saving a
trace identical to the newest stored one of its key adds nothing, so storing a finished run
again is a no-op. Every write holds the write lock from its first read (``write_session``):
concurrent importers and audits of one dataset neither collide nor lose rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from store.models import AuditResultRow, CaseRow
from store.session import retry_conflicts, write_session
from workbench.audit.cases import AuditCase, case_from_dict
from workbench.audit.trace import AuditTrace
from workbench.llm.errors import bound_message


def save_cases(engine: Engine, dataset: str, cases: Iterable[AuditCase]) -> int:
    """Insert or update cases of ``dataset`` by case id. Returns how many were written."""
    chosen = list(cases)

    def write() -> int:
        n = 0
        with write_session(engine) as session:
            existing = {
                r.case_id: r
                for r in session.exec(select(CaseRow).where(CaseRow.dataset == dataset)).all()
            }
            for case in chosen:
                payload = json.dumps(case.to_dict(), ensure_ascii=False)
                row = existing.get(case.id)
                if row is None:
                    row = CaseRow(dataset=dataset, case_id=case.id)
                    existing[case.id] = row
                row.session, row.label, row.payload_json = case.session, case.label, payload
                session.add(row)
                n += 1
            session.commit()
        return n

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


def save_trace(engine: Engine, trace: AuditTrace | dict[str, Any], run_id: str, dataset: str) -> int:
    return save_traces(engine, [trace], run_id, dataset)


def save_traces(
    engine: Engine, traces: Iterable[AuditTrace | dict[str, Any]], run_id: str, dataset: str
) -> int:
    """Append traces (objects or their dicts) under ``run_id``. Returns how many were added:
    a trace equal to the newest stored one of its (dataset, run, case, strategy) is skipped,
    and so is a repeat within ``traces``."""
    fields = []
    for t in traces:
        data = t.to_dict() if isinstance(t, AuditTrace) else dict(t)
        verdict = data.get("verdict")
        error = data.get("error")
        fields.append(dict(
            run_id=run_id,
            dataset=dataset,
            case_id=str(data["id"]),
            strategy=str(data["strategy"]),
            violation=None if verdict is None else bool(verdict["violation"]),
            error=None if error is None else bound_message(f"{error['kind']}: {error['message']}"),
            trace_json=json.dumps(data, ensure_ascii=False),
        ))

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


def load_traces(
    engine: Engine,
    run_id: str | None = None,
    strategy: str | None = None,
    dataset: str | None = None,
    case_id: str | None = None,
) -> list[AuditTrace]:
    """Traces filtered by run, strategy, dataset and/or case, oldest first."""
    stmt = select(AuditResultRow)
    if run_id is not None:
        stmt = stmt.where(AuditResultRow.run_id == run_id)
    if strategy is not None:
        stmt = stmt.where(AuditResultRow.strategy == strategy)
    if dataset is not None:
        stmt = stmt.where(AuditResultRow.dataset == dataset)
    if case_id is not None:
        stmt = stmt.where(AuditResultRow.case_id == case_id)
    with Session(engine) as session:
        rows = session.exec(stmt.order_by(AuditResultRow.id)).all()
    return [AuditTrace.from_dict(json.loads(r.trace_json)) for r in rows]


def latest_traces(
    engine: Engine, dataset: str, strategy: str | None = None
) -> dict[tuple[str, str], AuditTrace]:
    """The newest trace per (case id, strategy) of a dataset."""
    latest: dict[tuple[str, str], AuditTrace] = {}
    for t in load_traces(engine, strategy=strategy, dataset=dataset):
        latest[(t.id, t.strategy)] = t  # oldest first, so later rows win
    return latest


def runs(engine: Engine, dataset: str | None = None) -> list[str]:
    stmt = select(AuditResultRow.run_id).distinct()
    if dataset is not None:
        stmt = stmt.where(AuditResultRow.dataset == dataset)
    with Session(engine) as session:
        return sorted(session.exec(stmt).all())
