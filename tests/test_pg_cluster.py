"""The PostgreSQL test cluster says how to get a server when there is none."""

from __future__ import annotations

import pytest

from tests import pg_cluster as pg


def test_without_server_binaries_the_error_names_the_package(monkeypatch):
    monkeypatch.delenv(pg.URL_ENV, raising=False)
    monkeypatch.setattr(pg, "server_bin", lambda: None)
    with pytest.raises(FileNotFoundError, match=r"apt-get install postgresql.*WORKBENCH_TEST_PG_URL"):
        pg.Cluster().start()


def test_a_given_server_url_is_used_as_is(monkeypatch):
    monkeypatch.setenv(pg.URL_ENV, "postgresql+psycopg://u@db.example:5432/postgres")
    monkeypatch.setattr(pg, "server_bin", lambda: pytest.fail("must not look for binaries"))
    assert pg.Cluster().start() == "postgresql+psycopg://u@db.example:5432/postgres"


def test_each_store_test_gets_an_empty_database(pg_cluster):
    from sqlalchemy import create_engine, inspect

    first, second = pg_cluster.fresh_database(), pg_cluster.fresh_database()
    assert first != second
    engine = create_engine(first)
    assert inspect(engine).get_table_names() == []
    engine.dispose()
