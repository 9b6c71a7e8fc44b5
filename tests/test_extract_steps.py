"""Stored step results: the JSON-file store and the database store behave alike."""

from __future__ import annotations

import pytest

from workbench.extract.steps import JsonStepStore, MemoryStepStore, StepStore, step_key


def test_step_key_is_order_independent_and_sensitive_to_every_part():
    a = step_key("extract", block="b", prompt="p", settings={"model": "m", "max_tokens": 1})
    assert a == step_key("extract", settings={"max_tokens": 1, "model": "m"}, prompt="p", block="b")
    assert a != step_key("extract", block="b", prompt="p2", settings={"model": "m", "max_tokens": 1})
    assert a != step_key("fuse", block="b", prompt="p", settings={"model": "m", "max_tokens": 1})


def stores(tmp_path, engine):
    from store.extraction import SqlStepStore

    return [MemoryStepStore(), JsonStepStore(tmp_path / "steps"), SqlStepStore(engine)]


def test_round_trip_and_overwrite(tmp_path, engine):
    key = step_key("extract", block="x")
    for store in stores(tmp_path, engine):
        assert isinstance(store, StepStore)
        assert store.get(key) is None
        store.put(key, "extract", {"rules": ["é"], "n": 1})
        assert store.get(key) == {"rules": ["é"], "n": 1}
        store.put(key, "extract", {"n": 2})
        assert store.get(key) == {"n": 2} and len(store) == 1


def test_damaged_json_file_reads_as_missing(tmp_path):
    store = JsonStepStore(tmp_path)
    key = step_key("fuse", request="r")
    store.put(key, "fuse", {"ok": True})
    path = tmp_path / key[:2] / f"{key}.json"
    path.write_text('{"key": "half a wri', encoding="utf-8")
    assert store.get(key) is None
    assert not list(tmp_path.rglob("*.tmp"))


def test_json_store_refuses_keys_that_are_not_digests(tmp_path):
    with pytest.raises(ValueError, match="hex digests"):
        JsonStepStore(tmp_path).get("../../etc/passwd")


def test_sql_store_is_registered_with_the_models(engine):
    from sqlalchemy import inspect

    assert "extractionstep" in inspect(engine).get_table_names()
