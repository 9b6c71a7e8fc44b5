"""The persistent response cache and usage log in the workbench database."""

from __future__ import annotations

import threading

import pytest
from sqlmodel import SQLModel, create_engine

from store.llm_cache import (
    LlmCacheEntry,
    LlmUsageRow,
    SqlResponseCache,
    SqlUsageLog,
    persistent_gateway,
)
from workbench.llm import CachedResponse, ResponseCache, Usage, load_config
from workbench.llm.fake_server import FakeChatServer, reply, role_env

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
MESSAGES = [{"role": "user", "content": "ok?"}]


@pytest.fixture
def db(tmp_path):
    eng = create_engine(f"sqlite:///{tmp_path / 'llm.db'}", connect_args={"check_same_thread": False})
    SQLModel.metadata.create_all(eng, tables=[LlmCacheEntry.__table__, LlmUsageRow.__table__])
    yield eng
    eng.dispose()


def entry(key: str, text: str = '{"ok": true}') -> CachedResponse:
    return CachedResponse(
        key=key,
        request={"model": "m", "messages": MESSAGES},
        text=text,
        model="m",
        role="judge",
        prompt_tokens=30,
        completion_tokens=4,
        latency_ms=812.5,
        cost_usd=None,
    )


def test_sql_cache_round_trips_and_overwrites(db):
    cache = SqlResponseCache(db)
    assert isinstance(cache, ResponseCache)
    assert cache.get("k1") is None
    cache.put(entry("k1"))
    got = cache.get("k1")
    assert got == entry("k1")
    cache.put(entry("k1", '{"ok": false}'))
    assert cache.get("k1").text == '{"ok": false}'
    assert cache.stats() == {"entries": 1, "prompt_tokens": 30, "completion_tokens": 4, "latency_ms": 812.5}
    assert cache.clear() == 1 and cache.get("k1") is None


def test_concurrent_writers_of_the_same_key_do_not_fail(db):
    cache = SqlResponseCache(db)
    errors: list[BaseException] = []

    def write():
        try:
            for _ in range(10):
                cache.put(entry("same"))
        except BaseException as exc:  # pragma: no cover - the assertion reports it
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and cache.stats()["entries"] == 1


def test_usage_log_totals_per_role(db):
    log = SqlUsageLog(db)
    log(Usage(100, 10, 500.0, None, False, "embedded/m", "judge", "judge:1"))
    log(Usage(100, 10, 2.0, 0.0, True, "embedded/m", "judge", "judge:1", attempts=0))
    log(Usage(50, 5, 300.0, 0.002, False, "openai/x", "extractor", "extract:b1"))
    totals = log.totals_by_role()
    judge, extractor = totals["judge"], totals["extractor"]
    # judge: two calls, one a cache hit; live tokens count only the first (100 + 10).
    assert (judge.calls, judge.cached_calls) == (2, 1)
    assert (judge.prompt_tokens, judge.live_prompt_tokens) == (200, 100)
    assert judge.live_completion_tokens == 10 and judge.latency_ms == pytest.approx(502.0)
    assert judge.unpriced_calls == 1 and judge.cost_usd == 0.0
    assert extractor.cost_usd == pytest.approx(0.002) and extractor.unpriced_calls == 0


def test_persistent_gateway_caches_across_gateways(db, monkeypatch):
    monkeypatch.delenv("WORKBENCH_LLM_MODE", raising=False)
    with FakeChatServer([reply({"ok": True}, prompt_tokens=21)]) as srv:
        config = load_config(env=role_env(srv.api_base))
        first = persistent_gateway(db, config).complete_json("judge", MESSAGES, SCHEMA)
        # A new process would build a new gateway: the database still has the answer.
        second = persistent_gateway(db, config).complete_json("judge", MESSAGES, SCHEMA)
        assert len(srv.requests) == 1
    assert first.data == second.data == {"ok": True} and second.usage.cached
    totals = SqlUsageLog(db).totals_by_role()["judge"]
    assert totals.calls == 2 and totals.cached_calls == 1 and totals.live_prompt_tokens == 21


def test_make_engine_creates_the_llm_tables(tmp_path):
    # In a fresh interpreter: only store.tables (which make_engine imports) may register the tables.
    import subprocess
    import sys

    code = (
        "import sys; from sqlalchemy import inspect; from store.db import make_engine; "
        "e = make_engine(sys.argv[1]); print(sorted(inspect(e).get_table_names()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, f"sqlite:///{tmp_path / 'wb.db'}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "'llm_cache'" in out and "'llm_usage'" in out


def _columns(table, *left_out: str) -> set[str]:
    return {c.name for c in table.__table__.columns} - set(left_out)


def test_rows_hold_exactly_the_fields_of_the_records_they_store():
    # The sinks build rows with **asdict(record) and SQLModel ignores unknown keywords, so a
    # field added to a record without a column would be dropped without a word.
    from dataclasses import fields

    from store.llm_cache import _CACHED_FIELDS
    from store.llm_endpoints import LlmEndpointCallRow
    from workbench.llm.fleet import EndpointAttempt

    assert _columns(LlmUsageRow, "id", "at") == {f.name for f in fields(Usage)}
    assert _columns(LlmEndpointCallRow, "id", "at") == {f.name for f in fields(EndpointAttempt)}
    assert _columns(LlmCacheEntry, "request_json", "created_at", "logprobs_json") == set(_CACHED_FIELDS)
    assert {f.name for f in fields(CachedResponse)} - {"request", "logprobs"} == set(_CACHED_FIELDS)
