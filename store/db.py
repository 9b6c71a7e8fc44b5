"""Engine creation. SQLite file by default; any SQLAlchemy URL (or a plain SQLite file path)
through ``WORKBENCH_DB``."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

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
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
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
    SQLModel.metadata.create_all(engine)
    return engine
