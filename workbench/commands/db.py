"""``workbench db``: the database schema (Alembic migrations in store/migrations)."""

from __future__ import annotations

import argparse

from workbench.commands._common import action, add_actor_option


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("db", help="database schema: upgrade, show the revision, write a migration")
    dsub = p.add_subparsers(dest="db_command", required=True)
    up = action(dsub, "upgrade", _upgrade, help="upgrade WORKBENCH_DB (or --db) to the newest revision")
    up.add_argument("--db", help="SQLAlchemy URL or SQLite path (default: WORKBENCH_DB)")
    add_actor_option(up)  # a schema change is an admin's once the roster lists anyone
    rev = action(
        dsub, "revision", _revision,
        help="write a new migration for the tables and columns the models add (developers)",
    )
    rev.add_argument("message", help="what the change is, e.g. 'review notes column'")


def _upgrade(args) -> int:
    from sqlalchemy import text

    from store.db import database_url, make_engine
    from workbench.commands._common import cli_actor_before_upgrade
    from workbench.identity.roles import require

    # The roster as stored, before anything changes: an older database is read, not migrated.
    require(cli_actor_before_upgrade(args, args.db), "change settings")
    engine = make_engine(args.db)  # upgrades under the schema lock
    with engine.connect() as conn:
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    print(f"{database_url(args.db).split('@')[-1]}: at revision {revision}")
    return 0


def _revision(args) -> int:
    """Autogenerate against a scratch SQLite database at head: what the models add beyond
    the newest revision becomes the new one (review it before committing)."""
    import tempfile
    from pathlib import Path

    from alembic import command
    from sqlalchemy import create_engine

    from store.db import migrations_config
    from workbench.commands._common import CliError

    with tempfile.TemporaryDirectory() as folder:
        engine = create_engine(f"sqlite:///{Path(folder) / 'head.db'}")
        with engine.begin() as conn:
            config = migrations_config(conn)
            command.upgrade(config, "head")
            script = command.revision(config, message=args.message, autogenerate=True)
        engine.dispose()
    if script is None or isinstance(script, list):
        raise CliError("no revision was written; check store/migrations")
    print(f"wrote {script.path}; review it, then run the migration tests")
    return 0
