"""Engine creation. SQLite file by default; any SQLAlchemy URL (or a plain SQLite file path)
through ``WORKBENCH_DB``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, SQLModel, create_engine

T = TypeVar("T")

DEFAULT_DB_PATH = Path(".workbench") / "workbench.db"


def database_url(url: str | None = None) -> str:
    """The URL to use: the argument, else ``WORKBENCH_DB``, else ``sqlite:///.workbench/workbench.db``.

    A value without ``://`` is taken as a SQLite file path (``WORKBENCH_DB=/tmp/w.db`` is what
    people type); its folder is created.
    """
    chosen = url or os.environ.get("WORKBENCH_DB") or ""
    if "://" in chosen:
        return chosen
    path = Path(chosen) if chosen else DEFAULT_DB_PATH
    path.expanduser().parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.expanduser()}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # pragma: no cover - trivial
    # WAL lets readers (the UI) work while a batch job writes; busy_timeout makes concurrent
    # writers wait for the lock instead of failing with "database is locked".
    # busy_timeout first: switching to WAL itself needs the lock a concurrent writer may hold.
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str | None = None) -> Engine:
    """Create an engine and every table the imported models define.

    Table modules register themselves on ``SQLModel.metadata`` when imported; this imports
    them all so one call gives a complete schema.
    """
    import store.models  # noqa: F401  (registers tables)

    resolved = database_url(url)
    kwargs: dict = {}
    if resolved.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(resolved, **kwargs)
    if resolved.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    for attempt in range(3):
        try:
            _create_schema(engine)
            break
        except OperationalError as exc:
            # Processes starting on a fresh database at once: another created the table
            # between our check and our CREATE. The next pass sees it.
            if "already exists" not in str(exc) or attempt == 2:
                raise
    return engine


# Any fixed number: the key of the advisory lock that serialises schema changes on PostgreSQL.
SCHEMA_LOCK_KEY = 0x5C11CD6

def _create_schema(engine: Engine) -> None:
    """Create missing tables. On PostgreSQL, processes starting together on a fresh database
    would race inside the catalog (a duplicate ``pg_type`` row, not "already exists"), so the
    DDL runs in one transaction holding an advisory lock: the others wait, then find the
    tables made."""
    if engine.dialect.name != "postgresql":
        SQLModel.metadata.create_all(engine)
        return
    with engine.begin() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")
        SQLModel.metadata.create_all(conn)


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A session whose transaction holds the write lock from its first statement.

    Read-then-write code (next version number, "is this case stored yet?") must not let
    another writer slip in between its read and its write. On SQLite the transaction starts
    with ``BEGIN IMMEDIATE``: concurrent writers queue on the lock (``busy_timeout``) and
    each sees the others' committed rows. A plain deferred transaction would read a snapshot
    and then fail on upgrade ("database is locked") or on a unique constraint. Other engines
    rely on the tables' unique constraints and :func:`retry_conflicts`.
    """
    with Session(engine) as session:
        if engine.dialect.name == "sqlite":
            session.connection().exec_driver_sql("BEGIN IMMEDIATE")
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
