"""Stored extraction and fusion steps in the workbench database (a ``StepStore``).

One row per step key; ``put`` overwrites, so re-running a step after a prompt fix replaces
its answer. Rows are small JSON documents and never reference SKILL versions: the same block
text extracted for two versions of a SKILL is one row, which is what makes re-extraction
after an edit cheap.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, select

from store.core_tables import utcnow
from store.session import retry_conflicts, write_session


class ExtractionStep(SQLModel, table=True):
    key: str = Field(primary_key=True, max_length=64)
    kind: str = Field(index=True)  # "extract" or "fuse"
    value_json: str
    created_at: datetime = Field(default_factory=utcnow)


class SqlStepStore:
    """``workbench.extract.steps.StepStore`` over an SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        ExtractionStep.__table__.create(engine, checkfirst=True)

    def get(self, key: str) -> dict | None:
        with Session(self.engine) as session:
            row = session.get(ExtractionStep, key)
            if row is None:
                return None
            try:
                value = json.loads(row.value_json)
            except json.JSONDecodeError:
                return None  # a damaged row is redone, never trusted
            return value if isinstance(value, dict) else None

    def put(self, key: str, kind: str, value: dict) -> None:
        text = json.dumps(value, ensure_ascii=False)

        def write() -> None:
            # Under the write lock: two extractions of one SKILL finishing the same block
            # must not both find it missing and collide on the key.
            with write_session(self.engine) as session:
                row = session.get(ExtractionStep, key)
                if row is None:
                    session.add(ExtractionStep(key=key, kind=kind, value_json=text))
                else:
                    row.kind, row.value_json, row.created_at = kind, text, utcnow()
                    session.add(row)
                session.commit()

        retry_conflicts(write)

    def count(self, kind: str | None = None) -> int:
        with Session(self.engine) as session:
            query = select(ExtractionStep.key)
            if kind:
                query = query.where(ExtractionStep.kind == kind)
            return len(session.exec(query).all())

    def __len__(self) -> int:
        return self.count()
