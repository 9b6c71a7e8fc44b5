"""The audit API over a real uvicorn server on loopback (issue 34): the app ``workbench api``
serves (``commands.api.build_app``: the database store, the gateway), a fake OpenAI-compatible
judge (``workbench.llm.fake_server``) and real HTTP requests."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import uvicorn

from store import audit_repo
from store.db import make_engine
from workbench.api.server import server_config
from workbench.api.settings import ApiSettingsError, check_settings, load_api_settings
from workbench.commands.api import build_app
from workbench.llm import Gateway, load_config
from workbench.llm.fake_server import FakeChatServer, reply, role_env

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "fixtures" / "demo" / "index.json"
TOKEN = "t0ken-for-the-api-tests-0123456789"
REPLY_BLOCK = re.compile(r"<reply>\n(.*)\n</reply>", re.S)
CANCEL = {
    "conversation": [
        {"role": "user", "content": "Cancel reservation NQ7TZB, user lena_park_3310, plans changed."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_reservation_details", "arguments": '{"reservation_id": "NQ7TZB"}'}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": '{"cabin": "basic_economy", "insurance": "no", "created_at": "2024-05-11T09:20:00"}'},
    ],
    "reply": {"tool_calls": [{"id": "c2", "type": "function",
                              "function": {"name": "cancel_reservation",
                                           "arguments": '{"reservation_id": "NQ7TZB"}'}}]},
    "policies": ["airline-policy"],
}


def judge(body):
    """Flags a reply that cancels, citing the first rule of the context; else compliant."""
    prompt = body["messages"][-1]["content"]
    said = REPLY_BLOCK.search(prompt).group(1)
    ids = re.findall(r"^\[([A-Z]+-[A-Z]?\d+)\]", prompt, re.M)
    if "cancel_reservation" in said:
        return reply({"violation": True, "violated_rules": [ids[0]], "evidence": [],
                      "reason": f"cancels a basic economy booking [{ids[0]}]"})
    return reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"})


class Served:
    """``build_app`` under a real uvicorn server on a free loopback port, in a thread."""

    def __init__(self, tmp_path: Path, judge_server: FakeChatServer, monkeypatch, **settings):
        for key in list(settings):
            monkeypatch.setenv(f"WORKBENCH_API_{key.upper()}", str(settings.pop(key)))
        monkeypatch.setenv("WORKBENCH_API_TOKEN", TOKEN)
        monkeypatch.delenv("WORKBENCH_CONFIG", raising=False)
        self.engine = make_engine(f"sqlite:///{tmp_path / 'api.db'}")
        gateway = Gateway(load_config(env=role_env(judge_server.api_base, role="judge", retries=0)))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        args = argparse.Namespace(index=str(INDEX), host="127.0.0.1", port=self.port, dataset=None,
                                  run_id=None, concurrency=None, queue=None, strategy="cdg",
                                  judge_mode="whole", no_cache=True)
        self.app, self.settings = build_app(args, engine=self.engine, gateway=gateway)
        # The configuration `workbench api` serves with (header timeout, keep-alive).
        self.server = uvicorn.Server(server_config(self.app, self.settings, host="127.0.0.1",
                                                   port=self.port, lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "uvicorn did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.app.state.gateway.close()
        self.engine.dispose()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def fake_judge():
    with FakeChatServer(default=judge) as srv:
        yield srv


def test_auth_is_refused_without_the_token(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch) as api:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
            r = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=headers, timeout=30)
            assert r.status_code == 401, headers
            assert r.json()["error"] == "unauthorized" and "Bearer" in r.json()["hint"]
        assert httpx.get(f"{api.url}/v1/traces/api-x", timeout=30).status_code == 401
        assert fake_judge.requests == []  # nothing was audited
        assert httpx.get(f"{api.url}/openapi.json", timeout=30).json()["paths"].keys() >= {
            "/v1/audit", "/v1/traces/{trace_id}"}


def test_a_verdict_with_cited_spans_and_its_stored_trace(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch) as api:
        r = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=AUTH, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["verdict"] == "violation" and body["violation"] is True
        assert body["probability"] == 1.0  # the scripted server is certain of every token
        [cited] = body["cited_rules"]
        source = json.loads(INDEX.read_text())["skills"][0]["source"]
        assert cited["skill"] == "airline-policy" and cited["spans"]
        for span in cited["spans"]:
            assert span["text"] == source[span["start"]:span["end"]] and span["text"].strip()
        assert cited["id"] in body["closure_ids"] and body["skills"] == ["airline-policy"]
        got = httpx.get(f"{api.url}/v1/traces/{body['trace_id']}", headers=AUTH, timeout=30).json()
        assert got["trace"]["verdict"]["violated_rules"] == [cited["id"]]
        assert [t["role"] for t in got["case"]["context"]] == ["user", "assistant", "tool"]
        assert got["case"]["model_response"].startswith("[tool call] cancel_reservation")
        assert got["summary"]["cited_rules"] == body["cited_rules"]
        stored = audit_repo.load_traces(api.engine, run_id="api", dataset="api")
        assert [t.id for t in stored] == [body["trace_id"]]
        missing = httpx.get(f"{api.url}/v1/traces/api-nope", headers=AUTH, timeout=30)
        assert missing.status_code == 404 and "trace_id" in missing.json()["hint"]
        bad = httpx.post(f"{api.url}/v1/audit", json={**CANCEL, "policies": ["nope"]}, headers=AUTH,
                         timeout=30)
        assert bad.status_code == 422 and "airline-policy" in bad.json()["hint"]


def test_429_when_full_and_the_admitted_ones_are_answered(tmp_path, monkeypatch):
    slow = replace(reply({"violation": False, "violated_rules": [],
                          "evidence": [], "reason": "complies"}), delay_s=1.0)
    with FakeChatServer(default=slow) as srv, \
            Served(tmp_path, srv, monkeypatch, concurrency=1, queue=1) as api:

        async def burst():
            async with httpx.AsyncClient(timeout=60, headers=AUTH) as client:
                return await asyncio.gather(*[client.post(f"{api.url}/v1/audit", json=CANCEL)
                                              for _ in range(6)])

        codes = sorted(r.status_code for r in asyncio.run(burst()))
        assert codes.count(200) == 2 and codes.count(429) == 4, codes  # 1 running + 1 waiting
        busy = next(r for r in asyncio.run(burst()) if r.status_code == 429)
        assert busy.headers["Retry-After"] == "1" and busy.json()["error"] == "busy"
        assert "1 audits running and 1 waiting" in busy.json()["message"]


def test_nothing_is_lost_under_50_concurrent_requests(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch, concurrency=4, queue=60) as api:

        async def many():
            async with httpx.AsyncClient(timeout=120, headers=AUTH) as client:
                return await asyncio.gather(*[client.post(
                    f"{api.url}/v1/audit", json={**CANCEL, "client_id": f"r{i}"}) for i in range(50)])

        answers = asyncio.run(many())
        assert [r.status_code for r in answers] == [200] * 50
        ids = {r.json()["trace_id"] for r in answers}
        assert len(ids) == 50
        stored = audit_repo.load_traces(api.engine, run_id="api", dataset="api")
        assert sorted(t.id for t in stored) == sorted(ids)  # stored traces = requests
        cases = audit_repo.load_cases(api.engine, "api")
        assert sorted(c.extra["client_id"] for c in cases) == sorted(f"r{i}" for i in range(50))


def test_refuses_to_serve_beyond_loopback_without_a_token(tmp_path):
    bare = load_api_settings(tmp_path / "none.toml", env={})
    check_settings(bare)  # loopback, no token: allowed
    for host in ("0.0.0.0", "192.168.1.20", "api.example.org"):
        with pytest.raises(ApiSettingsError, match="without a bearer token"):
            check_settings(bare.with_changes(host=host))
    check_settings(bare.with_changes(host="0.0.0.0", token=TOKEN))
    with pytest.raises(ApiSettingsError, match="characters"):
        check_settings(bare.with_changes(token="short"))
    conf = tmp_path / "workbench.toml"
    conf.write_text('[api]\nport = 9001\ntoken = "in the file"\n')
    with pytest.raises(ApiSettingsError, match="unknown setting 'token'"):
        load_api_settings(conf, env={})
    (tmp_path / "tok").write_text(TOKEN + "\n")
    conf.write_text(f'[api]\nport = 9001\ntoken_file = "{tmp_path / "tok"}"\nqueue = 3\n')
    got = load_api_settings(conf, env={"WORKBENCH_API_QUEUE": "5"})
    assert (got.port, got.queue, got.token) == (9001, 5, TOKEN)
