"""The gateway against a local fault-injecting OpenAI-compatible server (no model needed)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from workbench.llm import (
    Gateway,
    MemoryResponseCache,
    ModelCallError,
    load_config,
    request_key,
    summarize,
)
from workbench.llm.fake_server import (
    FakeChatServer,
    drop,
    empty_choices,
    hang,
    raw,
    reply,
    role_env,
    status,
    truncated_body,
)

SCHEMA = {
    "type": "object",
    "properties": {"violation": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["violation", "reason"],
}
MESSAGES = [
    {"role": "system", "content": "You judge replies against rules."},
    {"role": "user", "content": "Rule R1: verify identity. Reply: 'Your order shipped.'"},
]
GOOD = {"violation": True, "reason": "identity was not verified (R1)"}


@pytest.fixture
def server():
    with FakeChatServer(default=status(500, "script exhausted")) as srv:
        yield srv


def make_gateway(srv: FakeChatServer, cache=None, sleeps: list | None = None, role="judge", **settings):
    config = load_config(env=role_env(srv.api_base, role=role, **settings))
    sleep = sleeps.append if sleeps is not None else (lambda _s: None)
    return Gateway(config=config, cache=cache, sleep=sleep)


def test_clean_answer_is_parsed_and_accounted(server):
    server.push(reply(GOOD, prompt_tokens=40, completion_tokens=12))
    gw = make_gateway(server)
    res = gw.complete_json("judge", MESSAGES, SCHEMA, schema_name="verdict", step="judge:case-17")
    assert res.data == GOOD
    assert res.usage.prompt_tokens == 40 and res.usage.completion_tokens == 12
    assert res.usage.step == "judge:case-17" and res.usage.role == "judge"
    assert res.usage.cached is False and res.usage.attempts == 1
    assert gw.usage_log == [res.usage]
    sent = server.requests[0]
    # The schema reaches the server as an OpenAI json_schema response_format.
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["response_format"]["json_schema"]["name"] == "verdict"
    assert sent["temperature"] == pytest.approx(0.01)  # the judge's default, as in the paper


@pytest.mark.parametrize(
    "fault",
    [
        status(429, "slow down"),
        status(500),
        status(503, "overloaded"),
        raw("<html>502 Bad Gateway</html>", 502),
        raw("this is not json"),
        truncated_body(),
        empty_choices(),
        drop(),
    ],
    ids=["429", "500", "503", "502-html", "malformed-body", "truncated-body", "no-choices", "drop"],
)
def test_transient_faults_are_retried_then_succeed(server, fault):
    server.push(fault, fault, reply(GOOD))
    sleeps: list[float] = []
    gw = make_gateway(server, sleeps=sleeps, retries=2, retry_backoff=0.5)
    res = gw.complete_json("judge", MESSAGES, SCHEMA)
    assert res.data == GOOD
    assert len(server.requests) == 3 and res.usage.attempts == 3
    # Exponential backoff with +-20% jitter: ~0.5 s, then ~1.0 s.
    assert len(sleeps) == 2
    assert 0.4 <= sleeps[0] <= 0.6 and 0.8 <= sleeps[1] <= 1.2


def test_retry_after_header_sets_the_wait(server):
    server.push(status(429, retry_after=0.25), reply(GOOD))
    sleeps: list[float] = []
    gw = make_gateway(server, sleeps=sleeps)
    assert gw.complete_json("judge", MESSAGES, SCHEMA).data == GOOD
    assert sleeps == [0.25]


def test_timeout_is_retried_and_the_final_error_says_what_to_check(server):
    server.push(hang(2.0), hang(2.0))
    gw = make_gateway(server, timeout=0.3, retries=1)
    started = time.perf_counter()
    with pytest.raises(ModelCallError) as info:
        gw.complete_json("judge", MESSAGES, SCHEMA)
    assert time.perf_counter() - started < 1.8  # two 0.3 s timeouts, not two 2 s waits
    err = info.value
    assert err.kind == "timeout" and err.attempts == 2
    assert err.endpoint == server.api_base
    assert server.api_base in str(err) and "timeout" in str(err)
    assert "[roles.judge].timeout" in str(err)


@pytest.mark.parametrize(
    "fault,kind",
    [
        (status(500), "server_error"),
        (status(429), "rate_limited"),
        (raw("{not json"), "malformed_response"),
        (empty_choices(), "malformed_response"),
        (drop(), "connection"),
    ],
)
def test_persistent_faults_end_in_a_typed_error(server, fault, kind):
    server.push(fault, fault, fault)
    gw = make_gateway(server, retries=2)
    with pytest.raises(ModelCallError) as info:
        gw.complete_json("judge", MESSAGES, SCHEMA, step="judge:case-3")
    assert info.value.kind == kind
    assert info.value.attempts == 3 and len(server.requests) == 3
    assert info.value.role == "judge" and server.api_base in str(info.value)
    assert "Check:" in str(info.value)
    # The failed call is accounted too, with its error kind.
    assert gw.usage_log[-1].error == kind and gw.usage_log[-1].step == "judge:case-3"
    assert info.value.usage is gw.usage_log[-1]  # callers keeping their own books see it too


@pytest.mark.parametrize("code,kind", [(400, "bad_request"), (401, "auth"), (404, "bad_request")])
def test_client_errors_are_not_retried(server, code, kind):
    server.push(status(code, "nope"), reply(GOOD))
    gw = make_gateway(server, retries=3)
    with pytest.raises(ModelCallError) as info:
        gw.complete_json("judge", MESSAGES, SCHEMA)
    assert info.value.kind == kind and len(server.requests) == 1


def test_dead_endpoint_fails_fast_with_a_clear_message():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    api_base = f"http://127.0.0.1:{port}/v1"
    gw = Gateway(config=load_config(env=role_env(api_base, retries=1)), sleep=lambda _s: None)
    started = time.perf_counter()
    with pytest.raises(ModelCallError) as info:
        gw.complete_text("judge", MESSAGES)
    assert time.perf_counter() - started < 5
    assert info.value.kind == "connection"
    assert api_base in str(info.value) and "workbench model check --role judge" in str(info.value)


@pytest.mark.parametrize(
    "bad",
    [
        reply("Sure! Here is my verdict: violation."),
        reply({"violation": "yes", "reason": "x"}),  # wrong type for the schema
        reply("[1, 2]"),
        reply(""),
    ],
    ids=["prose", "schema-mismatch", "not-an-object", "empty"],
)
def test_unusable_answer_gets_one_repair_attempt(server, bad):
    server.push(bad, reply(GOOD))
    gw = make_gateway(server)
    res = gw.complete_json("judge", MESSAGES, SCHEMA)
    assert res.data == GOOD and len(server.requests) == 2
    repair = server.requests[1]["messages"]
    assert repair[: len(MESSAGES)] == MESSAGES
    assert repair[-2]["role"] == "assistant"
    assert repair[-1]["role"] == "user" and "not usable" in repair[-1]["content"]
    # Tokens of both exchanges are accounted.
    assert res.usage.prompt_tokens == 22 and res.usage.attempts == 2


def test_answer_cut_off_at_the_limit_is_retried_with_twice_the_room(server):
    server.push(reply('{"violation": true, "reason": "cut o', finish_reason="length"), reply(GOOD))
    gw = make_gateway(server)
    res = gw.complete_json("judge", MESSAGES, SCHEMA)
    assert res.data == GOOD and len(server.requests) == 2
    first, retry = server.requests
    assert retry["messages"] == MESSAGES  # the cut-off text is not echoed back
    assert retry["max_tokens"] == 2 * first["max_tokens"]
    assert res.usage.attempts == 2


def test_repair_tells_the_model_what_validate_rejected(server):
    server.push(reply({"violation": True, "reason": ""}), reply(GOOD))

    def validate(data):
        if not data["reason"].strip():
            raise ValueError("reason must cite the violated rule")

    gw = make_gateway(server)
    res = gw.complete_json("judge", MESSAGES, SCHEMA, validate=validate)
    assert res.data == GOOD
    assert "reason must cite the violated rule" in server.requests[1]["messages"][-1]["content"]


def test_second_unusable_answer_raises_invalid_output(server):
    server.push(reply("nope"), reply("still nope"), reply(GOOD))
    gw = make_gateway(server)
    with pytest.raises(ModelCallError) as info:
        gw.complete_json("judge", MESSAGES, SCHEMA, step="judge:case-9")
    assert info.value.kind == "invalid_output" and len(server.requests) == 2
    assert "judge:case-9" in str(info.value)


def test_code_fenced_json_is_accepted(server):
    server.push(reply('```json\n{"violation": false, "reason": "ok"}\n```'))
    assert make_gateway(server).complete_json("judge", MESSAGES, SCHEMA).data == {
        "violation": False,
        "reason": "ok",
    }


def test_complete_text_returns_text_and_no_data(server):
    server.push(reply("refund, cancellation, identity"))
    res = make_gateway(server, role="keyworder").complete_text("keyworder", MESSAGES, step="kw")
    assert res.data is None and res.text == "refund, cancellation, identity"
    assert "response_format" not in server.requests[0]


def test_cache_hit_costs_no_request(server):
    server.push(reply(GOOD, prompt_tokens=40, completion_tokens=12))
    cache = MemoryResponseCache()
    gw = make_gateway(server, cache=cache)
    first = gw.complete_json("judge", MESSAGES, SCHEMA, step="a")
    second = gw.complete_json("judge", MESSAGES, SCHEMA, step="b")
    assert len(server.requests) == 1
    assert second.data == first.data and second.key == first.key
    assert second.usage.cached and second.usage.cost_usd == 0.0
    assert second.usage.prompt_tokens == 40  # the original exchange's size, for traces
    totals = summarize(gw.usage_log)
    assert totals.calls == 2 and totals.cached_calls == 1 and totals.live_prompt_tokens == 40


def test_use_cache_false_neither_reads_nor_writes(server):
    server.push(reply(GOOD), reply(GOOD), reply(GOOD))
    cache = MemoryResponseCache()
    gw = make_gateway(server, cache=cache)
    gw.complete_json("judge", MESSAGES, SCHEMA, use_cache=False)
    assert len(cache) == 0
    gw.complete_json("judge", MESSAGES, SCHEMA)  # a miss: asks and stores
    assert len(cache) == 1
    res = gw.complete_json("judge", MESSAGES, SCHEMA, use_cache=False)  # asks despite the entry
    assert len(server.requests) == 3 and not res.usage.cached


def test_cached_answer_failing_new_validation_is_asked_again(server):
    server.push(reply({"violation": True, "reason": "r"}), reply(GOOD))
    cache = MemoryResponseCache()
    gw = make_gateway(server, cache=cache)
    gw.complete_json("judge", MESSAGES, SCHEMA)

    def stricter(data):
        if len(data["reason"]) < 5:
            raise ValueError("reason too short")

    res = gw.complete_json("judge", MESSAGES, SCHEMA, validate=stricter)
    assert res.data == GOOD and not res.usage.cached and len(server.requests) == 2


def test_request_key_ignores_endpoint_but_not_content():
    with FakeChatServer() as a, FakeChatServer() as b:
        gw_a, gw_b = make_gateway(a), make_gateway(b)
        ra = gw_a.build_request(gw_a.config.role("judge"), MESSAGES, SCHEMA)
        rb = gw_b.build_request(gw_b.config.role("judge"), MESSAGES, SCHEMA)
    assert request_key(ra) == request_key(rb)
    assert request_key(ra) == request_key(dict(reversed(list(ra.items()))))
    for change in (
        {"temperature": 0.5},
        {"max_tokens": 7},
        {"model": "openai/other"},
        {"messages": MESSAGES[:1]},
        {"response_format": None},
    ):
        assert request_key({**ra, **change}) != request_key(ra)


def test_api_key_reaches_the_server_but_no_record(server, monkeypatch, tmp_path):
    from workbench.llm import Recorder

    monkeypatch.setenv("WORKBENCH_JUDGE_API_KEY", "sk-secret-123")
    server.push(reply(GOOD))
    config = load_config(env=role_env(server.api_base))
    recordings = tmp_path / "rec.jsonl"
    cache = MemoryResponseCache()
    gw = Gateway(config=config, cache=cache, recorder=Recorder(recordings))
    res = gw.complete_json("judge", MESSAGES, SCHEMA)
    assert server.headers[0].get("authorization") == "Bearer sk-secret-123"
    assert "sk-secret-123" not in recordings.read_text()
    assert "sk-secret-123" not in repr(config) and "sk-secret-123" not in repr(res)
    assert "sk-secret-123" not in repr(cache.get(res.key))


def test_unknown_role_and_bad_messages_are_caller_errors(server):
    from workbench.llm import LlmConfigError

    gw = make_gateway(server)
    with pytest.raises(LlmConfigError, match="unknown model role 'jduge'"):
        gw.complete_json("jduge", MESSAGES, SCHEMA)
    with pytest.raises(ValueError, match="role"):
        gw.complete_json("judge", [{"content": "x"}], SCHEMA)
    assert server.requests == []


def test_async_calls_are_bounded_by_role_concurrency():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(_body):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return reply(GOOD)

    with FakeChatServer(default=slow) as srv:
        gw = make_gateway(srv, concurrency=2)

        async def run():
            return await asyncio.gather(
                *[
                    gw.acomplete_json(
                        "judge", MESSAGES + [{"role": "user", "content": str(i)}], SCHEMA, step=f"s{i}"
                    )
                    for i in range(6)
                ]
            )

        results = asyncio.run(run())
        # A second event loop must work too (semaphores are per loop).
        again = asyncio.run(gw.acomplete_json("judge", MESSAGES, SCHEMA))
        gw.close()
    assert [r.usage.step for r in results] == [f"s{i}" for i in range(6)]
    assert all(r.data == GOOD for r in results) and again.data == GOOD
    assert state["peak"] == 2


def test_usage_sink_failure_does_not_break_the_call(server):
    server.push(reply(GOOD))

    def broken_sink(_usage):
        raise RuntimeError("database is locked")

    config = load_config(env=role_env(server.api_base))
    gw = Gateway(config=config, usage_sink=broken_sink)
    assert gw.complete_json("judge", MESSAGES, SCHEMA).data == GOOD


def test_served_embedded_model_shares_keys_with_the_in_process_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    served = load_config(
        env={
            "WORKBENCH_JUDGE_MODEL": "openai/qwen2.5-coder-1.5b-instruct-q4_k_m",
            "WORKBENCH_JUDGE_API_BASE": "http://127.0.0.1:8931/v1",
        }
    )
    embedded = load_config(env={})
    gw_served, gw_embedded = Gateway(served), Gateway(embedded)
    a = gw_served.build_request(served.role("judge"), MESSAGES, SCHEMA)
    b = gw_embedded.build_request(embedded.role("judge"), MESSAGES, SCHEMA)
    assert a["model"] == b["model"] == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert request_key(a) == request_key(b)


def test_broken_cache_costs_a_call_not_the_answer(server):
    class BrokenCache:
        def get(self, key):
            raise RuntimeError("database is locked")

        def put(self, entry):
            raise RuntimeError("disk full")

    server.push(reply(GOOD))
    assert make_gateway(server, cache=BrokenCache()).complete_json("judge", MESSAGES, SCHEMA).data == GOOD


def test_embedded_url_sends_embedded_roles_to_a_running_server_with_unchanged_keys(server, tmp_path):
    # [embedded].url (WORKBENCH_EMBEDDED_URL): the UI and CLI jobs share one `model serve`.
    from workbench.llm.embedded import current_embedded_server

    server.push(reply(GOOD))
    base = server.api_base.removesuffix("/v1")  # given without /v1, as people paste it
    local = Gateway(load_config(env={}))
    attached = Gateway(load_config(env={"WORKBENCH_EMBEDDED_URL": base}))
    assert attached.endpoint("judge") == server.api_base
    assert attached.build_request(attached.config.role("judge"), MESSAGES, SCHEMA) == local.build_request(
        local.config.role("judge"), MESSAGES, SCHEMA
    )  # same request, so the same cache and recording key
    res = attached.complete_json("judge", MESSAGES, SCHEMA)
    assert res.data == GOOD and len(server.requests) == 1
    assert res.usage.model == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert current_embedded_server() is None  # nothing started in this process
    with pytest.raises(Exception, match="not an http"):
        load_config(env={"WORKBENCH_EMBEDDED_URL": "127.0.0.1:8091"})
    # the server has gone away: the error says to restart it or unset the variable
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    gone = Gateway(load_config(env={"WORKBENCH_EMBEDDED_URL": dead, "WORKBENCH_JUDGE_RETRIES": "0"}))
    with pytest.raises(ModelCallError) as info:
        gone.complete_json("judge", MESSAGES, SCHEMA, use_cache=False)
    assert info.value.kind == "connection" and "WORKBENCH_EMBEDDED_URL" in str(info.value)


def test_summarize_counts_cache_hits_in_size_but_not_in_live_tokens_or_cost():
    from workbench.llm import Usage

    def use(p, c, ms, cost, cached=False):
        return Usage(p, c, ms, cost, cached, model="m", role="judge", step="s")

    # live priced (10+2, $0.5), live unpriced (20+3), cache hit (40+4, cost 0)
    totals = summarize([use(10, 2, 100.0, 0.5), use(20, 3, 50.0, None), use(40, 4, 1.5, 0.0, cached=True)])
    assert (totals.calls, totals.cached_calls, totals.unpriced_calls) == (3, 1, 1)
    assert (totals.prompt_tokens, totals.completion_tokens) == (70, 9)
    assert (totals.live_prompt_tokens, totals.live_completion_tokens) == (30, 5)
    assert totals.latency_ms == 151.5 and totals.cost_usd == 0.5
    assert summarize([]).calls == 0 and summarize(iter([])).cost_usd == 0.0
