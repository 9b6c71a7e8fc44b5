"""Append-only logs of gateway records (usage per call, fleet attempts per endpoint).

A gateway sink is called with one frozen record (a dataclass) per event; the log stores it
as one new row whose columns are the record's fields. Rows are only ever inserted, so
concurrent writers (CLI batch jobs, the UI) never conflict.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel

from workbench.clock import utcnow


class RoleRecordRow(SQLModel):
    """The columns every logged record's row starts with: a row id, when it was logged and the
    model role it belongs to (both indexed: the logs are read per role and by time)."""

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    role: str = Field(index=True)


class RecordLog:
    """Base of the gateway sinks: ``log(record)`` inserts ``row_type(**asdict(record))``.

    SQLModel drops unknown keywords silently, so each subclass's row columns are pinned to
    its record's fields by a test (``tests/test_llm_cache_store.py``): a field added to the
    record without a column would otherwise go unrecorded.
    """

    row_type: ClassVar[type[SQLModel]]

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __call__(self, record: Any) -> None:
        with Session(self.engine) as session:
            session.add(self.row_type(**asdict(record)))
            session.commit()
