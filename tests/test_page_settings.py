"""The Settings page, headless (AppTest), against a fake model server and a temp database."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.llm.fake_server import FakeChatServer, reply, role_env, status

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "settings.py")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'settings.db'}")
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_LLM_RECORDINGS"):
        monkeypatch.delenv(var, raising=False)
    with FakeChatServer(default=reply({"ok": True}, prompt_tokens=26, completion_tokens=6)) as srv:
        for name, value in role_env(srv.api_base, role="judge").items():
            monkeypatch.setenv(name, value)
        for name, value in role_env(srv.api_base, role="matcher").items():
            monkeypatch.setenv(name, value)
        yield srv


def all_text(at: AppTest) -> str:
    parts = [
        str(e.value)
        for kind in ("markdown", "caption", "success", "error", "code", "info")
        for e in getattr(at, kind)
    ]
    parts += [at.dataframe[i].value.to_csv() for i in range(len(at.dataframe))]
    return "\n".join(parts)


def test_lists_roles_and_never_shows_keys(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE_API_KEY", "sk-very-secret")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    roles = at.dataframe[0].value
    assert list(roles["role"]) == ["extractor", "fuser", "keyworder", "judge", "matcher"]
    judge = roles[roles["role"] == "judge"].iloc[0]
    assert judge["model"] == "openai/fake-model" and judge["endpoint"] == env.api_base
    assert judge["temperature"] == pytest.approx(0.01)
    assert "WORKBENCH_JUDGE_API_KEY" in judge["API key"]
    assert "sk-very-secret" not in all_text(at)
    assert env.requests == []  # nothing is sent until a button is pressed
    assert "No model calls recorded" in at.info[0].value


def test_test_connection_reports_and_totals_update(env):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.button(key="settings_test_judge").click().run()
    assert not at.exception
    assert len(env.requests) == 1 and env.requests[0]["max_tokens"] == 16
    assert any("26 prompt + 6 completion tokens" in s.value for s in at.success)
    usage = at.dataframe[1].value
    row = usage[usage["role"] == "judge"].iloc[0]
    assert row["calls"] == 1 and row["prompt tokens (live)"] == 26


def test_failed_connection_shows_what_to_check(env):
    env.push(status(503, "overloaded"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.button(key="settings_test_matcher").click().run()
    assert not at.exception
    assert at.error[0].value == "failed"
    assert "overloaded" in at.code[0].value and env.api_base in at.code[0].value


def test_invalid_configuration_is_explained(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE_MAX_TOKENS", "lots")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert "invalid" in at.error[0].value
    assert "WORKBENCH_JUDGE_MAX_TOKENS" in at.code[0].value


def test_embedded_url_is_shown_as_the_embedded_roles_endpoint(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_EMBEDDED_URL", "http://127.0.0.1:8091")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    roles = at.dataframe[0].value
    extractor = roles[roles["role"] == "extractor"].iloc[0]
    assert extractor["model"] == "embedded" and extractor["endpoint"] == "http://127.0.0.1:8091/v1"
    assert any("running `workbench model serve` at http://127.0.0.1:8091/v1" in c.value for c in at.caption)


def test_judge_context_window_is_shown_or_asked_for(env, monkeypatch):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert any("Judge context window: unknown" in c.value and "context_window" in c.value
               for c in at.caption)  # litellm does not know the fake model
    monkeypatch.setenv("WORKBENCH_JUDGE_CONTEXT_WINDOW", "12000")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert any("Judge context window: 12000 tokens" in c.value for c in at.caption)


def test_a_fleet_role_shows_each_endpoints_health_and_share(env, monkeypatch):
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    with FakeChatServer(default=reply({"ok": True})) as other:
        live = [env.api_base, other.api_base]
        monkeypatch.setenv("WORKBENCH_KEYWORDER_MODEL", "openai/fake-model")
        monkeypatch.setenv("WORKBENCH_KEYWORDER_ENDPOINTS", ",".join([*live, dead]))
        at = AppTest.from_file(PAGE, default_timeout=90).run()
        assert not at.exception
        for _ in range(4):
            at.button(key="settings_test_keyworder").click().run()
        assert not at.exception
        fleet = at.dataframe[1].value.set_index("endpoint")
        served = {env.api_base: len(env.requests), other.api_base: len(other.requests)}
    assert list(fleet.index) == [*live, dead]
    # A connection test has no retries: each of the 4 went to one endpoint, ok or not.
    assert fleet["calls"].sum() == 4 and fleet.loc[dead, "failures"] == fleet.loc[dead, "calls"]
    answered = sum(served.values())
    for base, n in served.items():
        assert fleet.loc[base, "calls"] == n
        assert fleet.loc[base, "share"] == pytest.approx(n / answered, abs=1e-3)
        assert fleet.loc[base, "health"] == ("ok" if n else "unused")
    assert fleet.loc[dead, "share"] == 0.0
    if fleet.loc[dead, "calls"]:  # random routing may or may not have picked it
        assert fleet.loc[dead, "health"] == "cooling down"
        assert fleet.loc[dead, "last failure"] == "connection"
