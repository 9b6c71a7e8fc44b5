"""Engine creation. SQLite file by default; any SQLAlchemy URL (or a plain SQLite file path)
through ``WORKBENCH_DB``."""

from __future__ import annotations

import functools
from pathlib import Path

from sqlalchemy import event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import SQLModel, create_engine

from workbench.settings import DB

DEFAULT_DB_PATH = Path(".workbench") / "workbench.db"


def database_url(url: str | None = None) -> str:
    """The URL to use: the argument, else ``WORKBENCH_DB``, else ``sqlite:///.workbench/workbench.db``.

    A value without ``://`` is taken as a SQLite file path (``WORKBENCH_DB=/tmp/w.db`` is what
    people type); its folder is created.
    """
    chosen = url or DB.read() or ""
    if "://" in chosen:
        return chosen
    path = Path(chosen) if chosen else DEFAULT_DB_PATH
    path.expanduser().parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.expanduser()}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # pragma: no cover - trivial
    # WAL lets readers (the UI) work while a batch job writes; busy_timeout makes concurrent
    # writers wait for the lock instead of failing with "database is locked". WAL is a
    # property of the file, set once, and switching to it needs the write lock: it is set
    # only when the file is not WAL yet (busy_timeout first, for that one switch). Setting it
    # on every connection made a process opening a database another was migrating (BEGIN
    # IMMEDIATE, slow on a loaded machine) wait out the busy timeout and fail "database is
    # locked" (test_concurrent_writers).
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    mode = cur.execute("PRAGMA journal_mode").fetchone()
    if not mode or str(mode[0]).lower() != "wal":
        cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str | None = None) -> Engine:
    """Create an engine and every table the imported table modules define.

    Table modules register themselves on ``SQLModel.metadata`` when imported; this imports
    them all (``store.tables``) so one call gives a complete schema.
    """
    import store.tables  # noqa: F401  (registers tables)

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
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def _create_schema(engine: Engine) -> None:
    """Bring the schema to the newest migration, holding the database's schema lock.

    Processes starting together on a fresh database must not migrate it twice: on
    PostgreSQL an advisory lock held for the transaction makes the others wait (without it
    they race inside the catalog, a duplicate ``pg_type`` row); on SQLite ``BEGIN
    IMMEDIATE`` does the same with the write lock. DDL is transactional on both, so a
    crash mid-migration leaves the previous revision, not half of the next.
    """
    if _schema_is_current(engine):
        return
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.begin()
            if engine.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")
        migrate(conn)
        conn.commit()


def _schema_is_current(engine: Engine) -> bool:
    """Whether the database is at the newest revision with every table, read without a lock.

    Every process opening the store passes here. Taking the write lock only to find nothing
    to do made eight writers starting together on a loaded machine queue behind each other's
    migration-script loading for more than the 30 s busy timeout ("database is locked"); a
    read needs no lock (WAL), and a stale read only sends us to the locked path below."""
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        if "alembic_version" not in tables or not set(SQLModel.metadata.tables) <= tables:
            return False
        stored = {row[0] for row in conn.exec_driver_sql("SELECT version_num FROM alembic_version")}
    return stored == _head_revisions()


def migrations_config(conn=None):
    """Alembic's ``Config`` for the store's migrations (:data:`MIGRATIONS`), bound to ``conn``
    (an open transaction for the commands to run on) when given."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if conn is not None:
        config.attributes["connection"] = conn
    return config


@functools.cache
def _head_revisions() -> frozenset[str]:
    from alembic.script import ScriptDirectory

    return frozenset(ScriptDirectory.from_config(migrations_config()).get_heads())


def migrate(conn) -> None:
    """Upgrade the database on ``conn`` (in an open transaction) to the newest revision.

    A database made by ``create_all`` before migrations existed has the tables but no
    ``alembic_version``: missing tables are created and it is stamped with the newest
    revision. Tables defined in code but in no migration yet
    (a branch that forgot its revision) are still created, so nothing breaks at run time;
    ``tests/test_store_migrations.py`` fails until the revision is written.
    """
    from alembic import command

    config = migrations_config(conn)
    tables = set(inspect(conn).get_table_names())
    if tables and "alembic_version" not in tables:
        # create_all builds every table the table classes define, i.e. the schema of the newest
        # revision (tests/test_store_migrations.py keeps tables and migrations in step), so
        # the database is stamped "head": stamping the baseline would replay later revisions'
        # CREATE TABLEs over the tables create_all just made.
        SQLModel.metadata.create_all(conn)
        command.stamp(config, "head")
    command.upgrade(config, "head")
    SQLModel.metadata.create_all(conn)


def roster_as_stored(url: str | None = None) -> dict[str, str]:
    """The roster (name -> role) of the database at ``url`` (else ``WORKBENCH_DB``), read with
    plain SQL: it creates, migrates and locks nothing, so ``workbench db upgrade`` can ask who
    may upgrade a database older than the code, and ``workbench model set`` can ask without
    making a database that is not there. An absent database or table is an empty roster."""
    from sqlalchemy import create_engine as plain_engine
    from sqlalchemy import text

    resolved = database_url(url)
    if resolved.startswith("sqlite:///"):
        path = resolved.removeprefix("sqlite:///")
        if path and path != ":memory:" and not Path(path).exists():
            return {}
    engine = plain_engine(resolved)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("workbench_person"):
                return {}
            return {name: role for name, role in
                    conn.execute(text("SELECT name, role FROM workbench_person"))}
    finally:
        engine.dispose()
