"""Explanations of score-decided verdicts (``VerdictExplanationRow``): the rule of the judged
closure most likely broken and the words of the reply that break it, found by asking the judge
again (``workbench.audit.judge.explain``) when a score decided violation over the judge's own
"compliant" (``Find the rule`` on Replay and Review, ``workbench verdicts --explain``).

Append-only: one row per answer, keyed by (dataset, run, case, strategy); the newest per key
is current, so finding the rule again is a new row, never an edit. Writing needs "store audit results" (it is
a model's answer about a stored verdict, like the verdict itself).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from store.session import insert_all
from workbench.audit.trace import AuditTrace
from workbench.clock import utcnow
from workbench.decision import Explanation
from workbench.identity.roles import Actor, require

Key = tuple[str, str, str]  # (run, case, strategy)


class VerdictExplanationRow(SQLModel, table=True):
    __tablename__ = "verdict_explanation"

    id: int | None = Field(default=None, primary_key=True)
    dataset: str = Field(index=True)
    run_id: str
    case_id: str
    strategy: str
    explanation_json: str  # workbench.decision.Explanation.to_dict()
    author: str = ""
    created_at: datetime = Field(default_factory=utcnow)


def save_explanations(engine: Engine, dataset: str,
                      items: Iterable[tuple[str, AuditTrace, Explanation]], *,
                      actor: Actor) -> int:
    """Store ``(run, trace, explanation)`` answers of ``dataset``; returns how many. Raises
    ``roles.NotAllowed`` (nothing written) when ``actor`` may not store audit results."""
    require(actor, "store audit results")
    rows = [VerdictExplanationRow(dataset=dataset, run_id=run, case_id=t.id, strategy=t.strategy,
                                  explanation_json=json.dumps(e.to_dict(), ensure_ascii=False),
                                  author=actor.name or "")
            for run, t, e in items]
    if rows:
        insert_all(engine, rows)
    return len(rows)


def explanations_for(engine: Engine, dataset: str) -> dict[Key, Explanation]:
    """The current explanation per (run, case, strategy) of ``dataset`` (the newest)."""
    out: dict[Key, Explanation] = {}
    with Session(engine) as session:
        for r in session.exec(select(VerdictExplanationRow)
                              .where(VerdictExplanationRow.dataset == dataset)
                              .order_by(col(VerdictExplanationRow.id))).all():
            out[(r.run_id, r.case_id, r.strategy)] = Explanation.from_dict(
                json.loads(r.explanation_json))
    return out


def explanation_version(engine: Engine, dataset: str) -> tuple[int, int]:
    """(rows, newest id) of ``dataset``'s explanations: a key for what is derived from them."""
    with Session(engine) as session:
        n, newest = session.exec(select(func.count(), func.max(VerdictExplanationRow.id))
                                 .where(VerdictExplanationRow.dataset == dataset)).one()
    return int(n or 0), int(newest or 0)
