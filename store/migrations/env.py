"""Alembic environment of the workbench store: always run by store.db.migrate on a
connection it already holds (and has locked), never from a URL of its own."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers every table on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
