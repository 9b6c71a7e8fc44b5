"""Schema changes go through Alembic migrations, on SQLite and on PostgreSQL (issue #20)."""

from __future__ import annotations

import sqlite3

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlmodel import SQLModel

import store.tables  # noqa: F401  (registers every table)
from store.db import MIGRATIONS, make_engine, migrations_config


def _head() -> str:
    """The newest revision of the migrations this checkout holds (not of a patched copy)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config).get_current_head()


def _revision(engine) -> list[str]:
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]


def test_the_migrations_alone_build_the_schema_the_models_define(store_url):
    """A table or column added in code without a revision fails here: write one with
    ``alembic revision --autogenerate`` (see docs/DEVELOPING.md)."""
    engine = create_engine(store_url)
    with engine.begin() as conn:
        command.upgrade(migrations_config(conn), "head")  # migrations only, no create_all
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        drift = compare_metadata(context, SQLModel.metadata)
    engine.dispose()
    assert drift == [], f"the table classes and migrations differ; add a revision: {drift}"


def test_make_engine_upgrades_a_new_database_to_head_once(store_url):
    make_engine(store_url).dispose()
    engine = make_engine(store_url)  # a second start changes nothing
    assert _revision(engine) == [_head()]
    assert {"skillversion", "llm_usage", "review_decision"} <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_a_database_made_by_create_all_is_stamped_and_keeps_its_rows(tmp_path):
    # As an older workbench left it: tables from create_all, some missing, no alembic_version.
    path = tmp_path / "old.db"
    old = create_engine(f"sqlite:///{path}")
    tables = [t for name, t in SQLModel.metadata.tables.items() if name != "llm_endpoint_calls"]
    SQLModel.metadata.create_all(old, tables=tables)
    with old.begin() as conn:
        conn.execute(text("INSERT INTO llm_usage (at, role, model, step, prompt_tokens, "
                          "completion_tokens, latency_ms, cached, attempts, error) VALUES "
                          "('2026-01-01 00:00:00', 'judge', 'm', 's', 3, 4, 5.0, 0, 1, '')"))
    old.dispose()

    engine = make_engine(f"sqlite:///{path}")
    assert _revision(engine) == [_head()]
    assert "llm_endpoint_calls" in inspect(engine).get_table_names()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT role, prompt_tokens FROM llm_usage")).all() == [("judge", 3)]
    engine.dispose()


def test_a_crash_inside_the_migration_leaves_the_database_untouched(tmp_path, monkeypatch):
    path = tmp_path / "crash.db"
    import store.db

    def broken(conn):
        conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("power cut")

    monkeypatch.setattr(store.db, "migrate", broken)
    with pytest.raises(RuntimeError, match="power cut"):
        make_engine(f"sqlite:///{path}")
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall() == []


def test_cli_upgrade_reports_the_revision(tmp_path, capsys):
    from workbench.cli import main

    assert main(["db", "upgrade", "--db", str(tmp_path / "cli.db")]) == 0
    assert f"at revision {_head()}" in capsys.readouterr().out


def test_cli_revision_writes_only_what_the_models_add(tmp_path, monkeypatch, capsys):
    import shutil

    from sqlmodel import Field

    import store.db
    from workbench.cli import main

    copy = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, copy)
    monkeypatch.setattr(store.db, "MIGRATIONS", copy)

    class ScratchNote(SQLModel, table=True):  # a table added in code, not yet migrated
        __tablename__ = "scratch_note"
        id: int | None = Field(default=None, primary_key=True)
        text: str = ""

    try:
        assert main(["db", "revision", "scratch notes"]) == 0
    finally:
        SQLModel.metadata.remove(ScratchNote.__table__)
    written = [p for p in (copy / "versions").glob("*.py") if "scratch_notes" in p.name]
    assert len(written) == 1
    body = written[0].read_text()
    assert "create_table('scratch_note'" in body and "create_table('skillversion'" not in body
    assert f"down_revision = '{_head()}'" in body
