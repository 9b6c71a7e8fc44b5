"""Labelled verdicts of a stored dataset: its newest traces and the right answer for each
case, from the stored case labels and, over them, each reviewer's own label
(``workbench.decision.reviewed_truth``). What calibrating a dataset reads, on the command line
and on the Evaluate page alike."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine

from store import audit_repo
from store.review import decisions_for
from workbench.audit.trace import AuditTrace, latest_per_case, trace_key
from workbench.decision import reviewed_truth
from workbench.vocabulary import label_violation


def labelled_traces(engine: Engine, dataset: str, runs: Sequence[str] | None = None
                    ) -> tuple[list[AuditTrace], dict[str, bool]]:
    """(newest trace per case and configuration, truth by case id)."""
    pairs = audit_repo.run_traces(engine, dataset, list(runs) if runs else None)
    traces = latest_per_case([t for _, t in pairs], key=trace_key)
    truth = {c.id: v for c in audit_repo.load_cases(engine, dataset)
             if (v := label_violation(c.label)) is not None}
    judged = {t.id: t.violation for t in traces}
    return traces, reviewed_truth(truth, decisions_for(engine, dataset), judged)
