"""Credentials in an endpoint address are never written or shown (issue 36).

A canary password sits in the judge's api_base (user-info), in a fleet's endpoints and in a
query parameter; every model call path then runs for real against fake OpenAI-compatible
servers (litellm and the Router in between): ok calls, failed calls, an audit batch written
to a JSONL file and to the store, the connection check, the Settings page. The canary must
not appear in any table of the database, trace, error, hint, log record, output or page.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sqlalchemy import MetaData, select
from streamlit.testing.v1 import AppTest

from workbench.llm import ModelCallError, load_config
from workbench.llm.fake_server import FakeChatServer, reply
from workbench.llm.redact import MASK, has_secret, redact_text, redact_url

ROOT = Path(__file__).resolve().parents[1]
CANARY = "CanaryPa55-36x"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
MESSAGES = [{"role": "user", "content": "ok?"}]


@pytest.mark.parametrize("url, shown", [
    ("http://ada:PW@host:8000/v1", "http://***@host:8000/v1"),
    ("https://TOKEN@host/v1", "https://***@host/v1"),
    ("https://u:p@ss@host/v1", "https://***@host/v1"),  # a password holding "@"
    ("https://host/v1?api-key=K&api-version=2024", "https://host/v1?api-key=***&api-version=2024"),
    ("https://host/v1?key=K;sig=S#access_token=T", "https://host/v1?key=***;sig=***#access_token=***"),
    ("http://[::1]:80/v1?Password=x&model=m", "http://[::1]:80/v1?Password=***&model=m"),
    ("http://gpu-box:8000/v1", "http://gpu-box:8000/v1"),
    ("", ""),
])
def test_the_rule_masks_user_info_and_secret_parameters_only(url, shown):
    assert redact_url(url) == shown
    assert has_secret(url) == (url != shown)
    assert redact_url(shown) == shown  # idempotent: a masked address stays as it is


def test_text_quoting_an_address_or_a_part_of_it_is_masked():
    text = (f"Connection error: POST http://ada:{CANARY}@h:1/v1/chat/completions failed "
            f"(host 'ada:{CANARY}@h:1'); see https://h/v1?token={CANARY}.")
    out = redact_text(text)
    assert CANARY not in out and out.count(MASK) == 3 and "http://***@h:1/v1/chat/completions" in out
    # A secret of a known address is masked even where it stands alone.
    assert redact_text(f"bad password {CANARY}", (f"http://ada:{CANARY}@h/v1",)) == "bad password ***"
    assert redact_text("ratio 294:1 at 10:30, mail ada@example.com") == \
        "ratio 294:1 at 10:30, mail ada@example.com"


@pytest.fixture
def servers():
    with FakeChatServer(default=reply({"ok": True})) as ok, \
            FakeChatServer(default=reply({"ok": True})) as other:
        yield ok, other


def with_canary(api_base: str, query: bool = False) -> str:
    scheme, rest = api_base.split("://", 1)
    url = f"{scheme}://ada:{CANARY}@{rest}"
    return url + f"?api-key={CANARY}" if query else url


@pytest.fixture
def canary_env(servers, tmp_path, monkeypatch):
    ok, other = servers
    monkeypatch.chdir(tmp_path)
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_LLM_RECORDINGS",
                "WORKBENCH_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    env = {
        "WORKBENCH_DB": f"sqlite:///{tmp_path / 'wb.db'}",
        # A single server: the canary as user-info and as a query parameter (the client
        # then posts to a path the server does not know: every call fails, for good).
        "WORKBENCH_JUDGE_MODEL": "openai/fake-model",
        "WORKBENCH_JUDGE_API_BASE": with_canary(ok.api_base, query=True),
        "WORKBENCH_JUDGE_RETRIES": "0",
        # A fleet: one endpoint answers, the other carries the canary and fails.
        "WORKBENCH_MATCHER_MODEL": "openai/fake-model",
        "WORKBENCH_MATCHER_ENDPOINTS": f"{with_canary(ok.api_base)},{with_canary(other.api_base, True)}",
        "WORKBENCH_MATCHER_RETRIES": "3",
        "WORKBENCH_MATCHER_RETRY_BACKOFF": "0.01",
        "WORKBENCH_MATCHER_COOLDOWN": "0",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def database_text(url: str) -> str:
    from store.db import make_engine

    eng = make_engine(url)
    meta = MetaData()
    meta.reflect(eng)
    with eng.connect() as conn:
        rows = [repr(tuple(r)) for t in meta.sorted_tables for r in conn.execute(select(t))]
    eng.dispose()
    return "\n".join(rows)


def test_a_canary_in_endpoint_addresses_is_written_and_shown_nowhere(canary_env, servers, tmp_path,
                                                                      caplog, capsys):
    from store.db import make_engine
    from store.llm_cache import persistent_gateway
    from workbench.cli import main
    from workbench.llm.check import check_role

    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    eng = make_engine(canary_env["WORKBENCH_DB"])
    gateway = persistent_gateway(eng)
    # The fleet: calls spread over both endpoints; the endpoint log is stored per attempt.
    answered = 0
    for i in range(6):
        try:
            gateway.complete_json("matcher", [{"role": "user", "content": f"ok {i}?"}], SCHEMA,
                                  use_cache=False)
            answered += 1
        except ModelCallError as exc:
            seen += [str(exc), exc.hint, exc.endpoint]
    assert answered >= 1
    # The single server: fails for good, the error names where it went.
    with pytest.raises(ModelCallError) as err:
        gateway.complete_json("judge", MESSAGES, SCHEMA)
    seen += [str(err.value), err.value.hint, err.value.endpoint, repr(err.value)]
    assert "ada" not in err.value.endpoint and f"{MASK}@127.0.0.1" in err.value.endpoint
    assert "api-key=***" in err.value.endpoint
    for role in ("judge", "matcher"):
        seen.append(json.dumps(check_role(gateway, role)))
    seen += [gateway.endpoint("judge"), gateway.endpoint("matcher"),
             repr(gateway.endpoint_stats("matcher"))]
    eng.dispose()
    # An audit batch whose judge fails: traces to a file and to the store, progress on stderr.
    out = tmp_path / "traces.jsonl"
    code = main(["audit", "--index", str(ROOT / "fixtures/demo/index.json"),
                 "--cases", str(ROOT / "fixtures/demo/cases.jsonl"), "--strategy", "cdg",
                 "--limit", "2", "--out", str(out), "--store", "canary"])
    assert code == 0
    traces = out.read_text()
    assert traces.count('"ModelCallError"') == 2 and "***@127.0.0.1" in traces
    printed = capsys.readouterr()
    seen += [traces, printed.out, printed.err, database_text(canary_env["WORKBENCH_DB"])]
    seen += [r.getMessage() + str(r.exc_text or "") for r in caplog.records]
    for text in seen:
        assert CANARY not in text, text[:2000]
    # The endpoint log was written (masked), so the test looked at real rows.
    from store.llm_endpoints import SqlEndpointLog

    logged = SqlEndpointLog(make_engine(canary_env["WORKBENCH_DB"])).summary()["matcher"]
    assert sum(s.calls for s in logged.values()) >= 6 and all(CANARY not in e for e in logged)
    assert all(e.startswith("http://***@127.0.0.1:") for e in logged)


def page_text(at: AppTest) -> str:
    parts = [str(e.value) for kind in ("markdown", "caption", "success", "error", "code", "info",
                                       "warning", "text_input") for e in getattr(at, kind)]
    parts += [at.dataframe[i].value.to_csv() for i in range(len(at.dataframe))]
    return "\n".join(parts)


def test_the_settings_page_shows_no_canary(canary_env):
    at = AppTest.from_file(str(ROOT / "pages" / "settings.py"), default_timeout=90).run()
    assert not at.exception
    roles = at.dataframe[0].value
    judge = roles[roles["role"] == "judge"].iloc[0]
    assert judge["endpoint"].startswith("http://***@127.0.0.1:") and "api-key=***" in judge["endpoint"]
    at.button(key="settings_test_judge").click().run()
    at.button(key="settings_test_matcher").click().run()
    assert not at.exception and at.error  # the judge's check failed, and says where
    # The admin form (single-user mode) with the judge's settings in it.
    at.selectbox(key="settings_edit_role").select("judge").run()
    api_base = [t for t in at.text_input if t.label == "API base URL"]
    assert api_base and api_base[0].value.startswith("http://***@")
    assert CANARY not in page_text(at)


def test_the_masked_address_is_never_saved_back(tmp_path):
    from workbench.identity.roles import COMMAND_LINE
    from workbench.llm.config_file import read_settings_file, save_role_settings
    from workbench.llm.errors import LlmConfigError

    toml = tmp_path / "workbench.toml"
    toml.write_text("[roles.judge]\nmax_tokens = 512\n")
    for value, needle in (("http://***@gpu:8000/v1", "masked part"),
                          (f"http://gpu:8000/v1?api-key={CANARY}", "credentials")):
        with pytest.raises(LlmConfigError, match=needle):
            save_role_settings(toml, "judge", {"api_base": value}, actor=COMMAND_LINE, env={},
                               base_hash=read_settings_file(toml).content_hash)
    assert toml.read_text() == "[roles.judge]\nmax_tokens = 512\n"


def test_a_stored_trace_error_from_before_is_shown_masked():
    from workbench.audit.trace import AuditTrace

    old = {"id": "c1", "strategy": "cdg", "error": {
        "kind": "ModelCallError", "message": f"judge call at http://ada:{CANARY}@gpu/v1 failed"}}
    trace = AuditTrace.from_dict(old)
    assert CANARY not in trace.error.message and "http://***@gpu/v1" in trace.error.message


def test_config_errors_quote_the_address_masked(monkeypatch):
    from workbench.llm.errors import LlmConfigError

    env = {"WORKBENCH_JUDGE_MODEL": "openai/x",
           "WORKBENCH_JUDGE_ENDPOINTS": f"gpu-1:{CANARY}@h/v1,http://ok:8000/v1"}
    with pytest.raises(LlmConfigError) as err:
        load_config(env=env)
    assert CANARY not in str(err.value)

