"""Model fleets: one role over several endpoints through the litellm Router."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from workbench.llm import Gateway, LlmConfigError, MemoryResponseCache, Recorder, Replayer, load_config
from workbench.llm.fake_server import FakeChatServer, reply
from workbench.llm.fleet import EndpointAttempt, EndpointStats, shares

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def fleet_env(bases: list[str], **settings: object) -> dict[str, str]:
    env = {
        "WORKBENCH_JUDGE_MODEL": "openai/fake-model",
        "WORKBENCH_JUDGE_ENDPOINTS": ",".join(bases),
        "WORKBENCH_JUDGE_RETRY_BACKOFF": "0.01",
        "WORKBENCH_JUDGE_TIMEOUT": "5",
        "WORKBENCH_JUDGE_RETRIES": "2",
    }
    env.update({f"WORKBENCH_JUDGE_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def echo(body: dict) -> object:
    # The answer depends on the question only, as with a real model behind every endpoint.
    n = int(body["messages"][-1]["content"].split()[-1])
    return reply({"n": n})


def ask(gateway: Gateway, n: int, **kwargs: object):
    return gateway.complete_json("judge", [{"role": "user", "content": f"number {n}"}], SCHEMA, **kwargs)


@pytest.fixture
def three():
    servers = [FakeChatServer(default=echo).start() for _ in range(3)]
    yield servers
    for s in servers:
        s.stop()


def test_endpoints_come_from_a_toml_list_or_a_comma_separated_variable(tmp_path):
    toml = tmp_path / "wb.toml"
    toml.write_text(
        '[roles.judge]\nmodel = "openai/m"\nendpoints = ["http://a:1/v1", "http://b:1/v1"]\n'
        'routing = "least-busy"\ncooldown = 5\n'
    )
    role = load_config(toml, env={}).role("judge")
    assert role.endpoints == ("http://a:1/v1", "http://b:1/v1") and role.is_fleet
    assert role.routing == "least-busy" and role.cooldown == 5.0
    env = {"WORKBENCH_JUDGE_MODEL": "openai/m", "WORKBENCH_JUDGE_ENDPOINTS": " http://a:1/v1, http://c:2/v1 "}
    assert load_config(env=env).role("judge").endpoints == ("http://a:1/v1", "http://c:2/v1")
    assert not load_config(env={}).role("judge").is_fleet


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ENDPOINTS": "http://a:1/v1"}, "not 'embedded'"),
        ({"MODEL": "openai/m", "ENDPOINTS": "http://a:1/v1", "API_BASE": "http://b:1/v1"}, "not both"),
        ({"MODEL": "openai/m", "ENDPOINTS": "gpu-1:8000"}, "not http(s) addresses"),
        ({"MODEL": "openai/m", "ENDPOINTS": "http://a:1/v1,http://a:1/v1"}, "same address twice"),
        ({"MODEL": "openai/m", "ROUTING": "round-robin"}, "is not one of"),
    ],
)
def test_a_bad_fleet_is_refused_with_what_to_change(settings, message):
    with pytest.raises(LlmConfigError, match="role 'judge'") as err:
        load_config(env={f"WORKBENCH_JUDGE_{k}": v for k, v in settings.items()})
    assert message in str(err.value)


def test_calls_spread_over_three_endpoints_and_are_counted_per_endpoint(three):
    gateway = Gateway(load_config(env=fleet_env([s.api_base for s in three])))
    answers = [ask(gateway, n).data["n"] for n in range(60)]
    assert answers == list(range(60))
    stats = gateway.endpoint_stats("judge")
    assert set(stats) == {s.api_base for s in three}
    served = {s.api_base: len(s.requests) for s in three}
    assert {e: st.calls for e, st in stats.items()} == served
    # Random choice over 3: each gets ~20 of 60; below 5 would be a broken router
    # (binomial(60, 1/3) < 5 has probability ~1e-5).
    assert all(n >= 5 for n in served.values()), served
    assert abs(sum(shares(served).values()) - 1.0) < 1e-9


def test_an_endpoint_killed_mid_run_loses_no_call(three):
    attempts: list[EndpointAttempt] = []
    gateway = Gateway(
        load_config(env=fleet_env([s.api_base for s in three], concurrency=4)),
        endpoint_sink=attempts.append,
    )
    victim = three[0]
    victim_base = victim.api_base  # a killed server no longer knows its address
    killed = threading.Event()

    def one(n: int) -> int:
        if n == 20:
            victim.kill()
            killed.set()
        return ask(gateway, n).data["n"]

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(one, range(80)))
    assert killed.is_set()
    assert answers == list(range(80))  # every call answered, none twice or lost
    before = len(victim.requests)
    for n in range(80, 90):
        assert ask(gateway, n).data["n"] == n
    assert len(victim.requests) == before  # in cooldown: the Router routes around it
    health = {e: s.health(cooldown=30.0) for e, s in gateway.endpoint_stats("judge").items()}
    assert health[victim_base] == "cooling down"
    assert [health[s.api_base] for s in three[1:]] == ["ok", "ok"]
    failed = [a for a in attempts if not a.ok]
    assert failed and {a.endpoint for a in failed} == {victim_base}
    assert {a.error for a in failed} <= {"connection", "malformed_response", "timeout"}


def test_cache_and_usage_work_as_for_one_server(three):
    cache = MemoryResponseCache()
    gateway = Gateway(load_config(env=fleet_env([s.api_base for s in three])), cache)
    first = ask(gateway, 7)
    again = ask(gateway, 7)
    assert again.data == first.data == {"n": 7} and again.key == first.key
    assert sum(len(s.requests) for s in three) == 1  # the second came from the cache
    live, hit = gateway.usage_log
    assert (live.cached, hit.cached) == (False, True)
    assert live.model == "openai/fake-model" and live.prompt_tokens == 11


def test_recordings_made_through_a_fleet_replay_without_it(tmp_path, three):
    path = tmp_path / "fleet.jsonl"
    config = load_config(env=fleet_env([s.api_base for s in three]))
    recorded = [ask(Gateway(config, recorder=Recorder(path)), n).data for n in range(5)]
    for s in three:
        s.kill()
    replayed = [ask(Gateway(config, recorder=Replayer(path)), n).data for n in range(5)]
    assert replayed == recorded == [{"n": n} for n in range(5)]


def test_health_says_cooling_down_only_within_the_cooldown():
    stats = EndpointStats(calls=3, failures=1, last_failure_at=100.0, last_ok_at=90.0)
    assert stats.health(cooldown=30, now=110.0) == "cooling down"
    assert stats.health(cooldown=30, now=131.0) == "ok"
    recovered = EndpointStats(calls=2, failures=1, last_failure_at=100.0, last_ok_at=105.0)
    assert recovered.health(30, 110.0) == "ok"
    assert EndpointStats().health(30) == "unused"


def test_the_database_log_gives_each_endpoints_share_and_health(tmp_path, three, monkeypatch):
    import time

    from store.db import make_engine
    from store.llm_cache import persistent_gateway
    from store.llm_endpoints import SqlEndpointLog

    monkeypatch.delenv("WORKBENCH_LLM_MODE", raising=False)
    engine = make_engine(f"sqlite:///{tmp_path / 'wb.db'}")
    bases = [s.api_base for s in three]
    three[2].kill()
    gateway = persistent_gateway(engine, load_config(env=fleet_env(bases)))
    assert [ask(gateway, n).data["n"] for n in range(30)] == list(range(30))
    summary = SqlEndpointLog(engine).summary()["judge"]
    assert sum(s.calls - s.failures for s in summary.values()) == 30  # one success per call
    assert summary[bases[2]].calls == summary[bases[2]].failures >= 1
    assert summary[bases[2]].last_error == "connection"
    assert summary[bases[2]].health(cooldown=30, now=time.time()) == "cooling down"
    assert {summary[b].health(cooldown=30, now=time.time()) for b in bases[:2]} == {"ok"}
    assert {b: len(s.requests) for b, s in zip(bases, three, strict=True)} == {
        b: summary[b].calls for b in bases[:2]
    } | {bases[2]: 0}


def test_a_fallback_role_answers_when_every_server_of_the_role_fails(tmp_path, three):
    primary, backup = three[0], three[1]
    primary_base, backup_base = primary.api_base, backup.api_base
    primary.kill()
    toml = tmp_path / "wb.toml"  # an extra role is defined by its table in the file
    toml.write_text(f'[roles.judge_local]\nmodel = "openai/fake-model"\napi_base = "{backup_base}"\n')
    env = fleet_env([primary_base], fallback="judge_local", retries=0)
    gateway = Gateway(load_config(toml, env=env))
    assert [ask(gateway, n).data["n"] for n in range(3)] == [0, 1, 2]  # no retries needed
    assert len(backup.requests) == 3
    assert gateway.endpoint_stats("judge")[backup_base].calls == 3


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WORKBENCH_JUDGE_FALLBACK": "nobody"}, "is not another role"),
        ({"WORKBENCH_JUDGE_FALLBACK": "judge"}, "is not another role"),
        ({"WORKBENCH_JUDGE_FALLBACK": "matcher"}, "workbench model serve"),
        (
            {
                "WORKBENCH_JUDGE_FALLBACK": "matcher",
                "WORKBENCH_MATCHER_MODEL": "openai/m",
                "WORKBENCH_MATCHER_FALLBACK": "judge",
            },
            "chains of fallbacks",
        ),
    ],
)
def test_a_bad_fallback_is_refused(env, message):
    with pytest.raises(LlmConfigError, match="fallback") as err:
        load_config(env={"WORKBENCH_JUDGE_MODEL": "openai/m", **env})
    assert message in str(err.value)
