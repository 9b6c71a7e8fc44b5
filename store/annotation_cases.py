"""Audit cases to inspect: stored audit traces (``AuditResultRow``) joined with their cases
(``CaseRow``) for the interaction the trace does not repeat."""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from store.core_tables import AuditResultRow, CaseRow
from store.session import where_given
from workbench.annotation.inspection import (
    InspectionCase,
    TraceError,
    case_from_audit_result,
    with_case,
)


def audit_result_count(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(AuditResultRow)).one())


def inspection_cases(engine: Engine, *, limit: int = 500, strategy: str | None = None,
                     with_closure_only: bool = True) -> tuple[list[InspectionCase], list[str]]:
    """The newest ``limit`` stored audit traces as inspection cases (newest first), plus a
    message for each trace that could not be read.

    ``strategy`` keeps one strategy's traces; ``with_closure_only`` drops traces without a
    rule closure (baselines retrieve passages, which the CDG criteria do not apply to).
    """
    query = where_given(select(AuditResultRow), (AuditResultRow.strategy, strategy)).order_by(
        AuditResultRow.id.desc()).limit(limit)
    cases: list[InspectionCase] = []
    errors: list[str] = []
    with Session(engine) as session:
        rows = list(session.exec(query))
        payloads = _case_payloads(session, {(r.dataset, r.case_id) for r in rows})
    for row in rows:
        try:
            case = case_from_audit_result(row.run_id, row.dataset, row.case_id, row.strategy,
                                          row.violation, row.trace_json)
        except TraceError as exc:
            errors.append(str(exc))
            continue
        if with_closure_only and not any(case.closure.values()):
            continue
        payload = payloads.get((row.dataset, row.case_id))
        cases.append(with_case(case, payload) if payload else case)
    return cases, errors


def _case_payloads(session: Session, keys: set[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    datasets = {dataset for dataset, _ in keys}
    if not datasets:
        return {}
    found = {}
    for row in session.exec(select(CaseRow).where(CaseRow.dataset.in_(datasets))):
        if (row.dataset, row.case_id) in keys:
            try:
                payload = json.loads(row.payload_json)
            except json.JSONDecodeError:
                continue
            if isinstance(payload, dict):
                found[(row.dataset, row.case_id)] = payload
    return found
