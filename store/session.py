"""Write sessions and conflict retries, shared by every store module that writes.

Kept apart from ``store.db`` (engine creation), which imports every table module through
``store.tables``: table modules import these helpers from here, so no store module imports
one that imports it back. ``store.db`` re-exports both names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

T = TypeVar("T")

# The advisory lock every PostgreSQL write session takes (store.db's schema lock uses another).
WRITE_LOCK_KEY = 0x5C_DB_57_0E


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A session whose transaction holds the write lock from its first statement.

    Read-then-write code (next version number, "is this case stored yet?") must not let
    another writer slip in between its read and its write. On SQLite the transaction starts
    with ``BEGIN IMMEDIATE``: concurrent writers queue on the lock (``busy_timeout``) and
    each sees the others' committed rows. A plain deferred transaction would read a snapshot
    and then fail on upgrade ("database is locked") or on a unique constraint. On PostgreSQL
    the transaction takes one advisory lock, the same serialisation: under READ COMMITTED
    each statement sees a fresh snapshot, so "the latest version" read by one statement and
    "max(version) + 1" read by the next could disagree (two writers importing the same SKILL
    made it twice, and every later save from version 1 was then refused as stale). Other
    engines rely on the tables' unique constraints and :func:`retry_conflicts`.
    """
    with Session(engine) as session:
        if engine.dialect.name == "sqlite":
            session.connection().exec_driver_sql("BEGIN IMMEDIATE")
        elif engine.dialect.name == "postgresql":
            session.connection().exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")
        yield session


def retry_conflicts(write: Callable[[], T], attempts: int = 5) -> T:
    """Run ``write`` (which opens its own :func:`write_session`), again when a concurrent
    writer won a unique constraint or the lock wait ran out; the last failure propagates."""
    for attempt in range(attempts):
        try:
            return write()
        except (IntegrityError, OperationalError):
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def insert_all(engine: Engine, rows: list) -> list[int]:
    """Insert ``rows`` (new table-model instances) in one transaction, all or none, and
    return their new ids in order. For append-only records, which never conflict."""
    with Session(engine) as session:
        session.add_all(rows)
        session.flush()  # assigns the ids while the rows are still attached
        ids = [row.id for row in rows]
        session.commit()
        return ids


def where_given(stmt, *filters: tuple):
    """``stmt`` narrowed by ``column == value`` for every ``(column, value)`` whose value is not
    None (the repositories' optional keyword filters: None means "any")."""
    for column, value in filters:
        if value is not None:
            stmt = stmt.where(column == value)
    return stmt

