"""The API's bounded logs and idempotent writes (issue 54 item 5):

- a request retried with the same ``Idempotency-Key`` is audited and stored once, whether
  the retry comes after the answer, races the first, or comes after a kill -9 that lost the
  answer (the write-ahead entry carries the key); the same key with another body is 422;
- the contract-check route is rate-limited like the audit (429 with ``Retry-After``), and
  its blocked-call log keeps a bounded digest of the arguments (a 3 MiB argument makes a
  line of a few KB) and rotates.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from types import SimpleNamespace

import httpx
import pytest
from fastapi.testclient import TestClient

from store import audit_repo
from tests.test_api import AUTH, CANCEL, ROOT, Served, judge
from tests.test_api_contracts import contract  # noqa: F401 (a fixture)
from tests.test_api_write_ahead import SlowStore, crash
from workbench.api.app import create_app
from workbench.api.contracts import ContractGuard
from workbench.api.idempotency import Idempotent, idempotent_trace_id
from workbench.api.service import AuditService, MemoryTraceStore, RequestError
from workbench.api.settings import ApiSettings
from workbench.api.write_ahead import WriteAheadStore
from workbench.contracts import Action, ContractCheckLog, check_call
from workbench.identity.roles import Actor
from workbench.llm.fake_server import FakeChatServer

API = Actor.signed_in("api", "analyst")


@pytest.fixture
def fake_judge():
    with FakeChatServer(default=judge) as srv:
        yield srv


def stored(api) -> list:
    return audit_repo.load_traces(api.engine, run_id="api", dataset="api")


def test_a_retried_request_is_stored_once(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch, write_ahead=tmp_path / "wal") as api:
        key = {"Idempotency-Key": "5c3f9a1e-retry-me", **AUTH}
        first = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=key, timeout=60)
        again = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=key, timeout=60)
        assert first.status_code == again.status_code == 200, (first.text, again.text)
        assert first.json()["trace_id"] == again.json()["trace_id"] == idempotent_trace_id(
            "5c3f9a1e-retry-me")
        assert again.headers["idempotent-replayed"] == "true"
        assert "idempotent-replayed" not in first.headers
        assert again.json()["verdict"] == first.json()["verdict"]
        per_audit = len(fake_judge.requests)  # the model calls of one audit: none for the retry
        # Five retries at once: one is audited, the others wait for it and are answered from it.
        answers: list = []
        threads = [threading.Thread(target=lambda: answers.append(httpx.post(
            f"{api.url}/v1/audit", json=CANCEL, headers={"Idempotency-Key": "raced", **AUTH},
            timeout=60))) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert [a.status_code for a in answers] == [200] * 5
        assert {a.json()["trace_id"] for a in answers} == {idempotent_trace_id("raced")}
        assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 4
        assert len(fake_judge.requests) == 2 * per_audit
        # The same key with another request names another request: refused.
        other = dict(CANCEL, reply="I kept the booking as it is.")
        refused = httpx.post(f"{api.url}/v1/audit", json=other, headers=key, timeout=60)
        assert refused.status_code == 422 and "another request" in refused.json()["message"]
        bad = httpx.post(f"{api.url}/v1/audit", json=CANCEL, timeout=60,
                         headers={"Idempotency-Key": "x" * 300, **AUTH})
        assert bad.status_code == 422 and "Idempotency-Key" in bad.json()["message"]
        # Without a key, each request is its own.
        plain = [httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=AUTH, timeout=60)
                 for _ in range(2)]
        assert plain[0].json()["trace_id"] != plain[1].json()["trace_id"]
        deadline = time.monotonic() + 20
        while len(stored(api)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)  # the write-ahead writer stores after answering
        ids = [t.id for t in stored(api)]
    assert sorted(ids) == sorted([idempotent_trace_id("5c3f9a1e-retry-me"),
                                  idempotent_trace_id("raced"), *(p.json()["trace_id"] for p in plain)])
    # The write-ahead entries carry the key with the case.
    entries = [json.loads(line) for seg in (tmp_path / "wal").rglob("wal-*.jsonl")
               for line in seg.read_text().splitlines()]
    keys = {(e["case"].get("idempotency") or {}).get("key") for e in entries}
    assert {"5c3f9a1e-retry-me", "raced"} <= keys


def test_a_retry_after_a_crash_that_lost_the_answer_is_stored_once(tmp_path, fake_judge):
    from workbench.audit.policy import AuditIndex
    from workbench.graph import PolicyIndex
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import role_env

    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures" / "demo" / "index.json"))
    gateway = Gateway(load_config(env=role_env(fake_judge.api_base, role="judge", retries=0)))
    slow = SlowStore()  # the database never got it before the kill
    try:
        wal = WriteAheadStore(slow, tmp_path / "q", on_stored=lambda *_: None)
        first, replayed = Idempotent(AuditService(index, gateway, wal)).audit(CANCEL, "lost-1",
                                                                             actor=API)
        assert not replayed
        crash(wal)  # kill -9: the answer never reached the client
        database = MemoryTraceStore()
        again = WriteAheadStore(database, tmp_path / "q", on_stored=lambda *_: None)
        assert again.replayed == 1
        retry, replayed = Idempotent(AuditService(index, gateway, again)).audit(CANCEL, "lost-1",
                                                                               actor=API)
        assert replayed and retry["trace_id"] == first["trace_id"]
        again.close()
        assert list(database.items) == [first["trace_id"]]
        assert len(fake_judge.requests) == 1  # audited once
        with pytest.raises(RequestError, match="printable ASCII"):
            Idempotent(AuditService(index, gateway, database)).audit(CANCEL, "two words",
                                                                    actor=API)
    finally:
        slow.release.set()
        gateway.close()


# -- the contract route ----------------------------------------------------------------------------

def _client(contract, log, **settings):  # noqa: F811 (contract: the fixture's value)
    service = SimpleNamespace(store_takes_actor=True)
    app = create_app(service, ApiSettings(**settings), ContractGuard({contract.name: contract}, log))
    return TestClient(app)


def _blocked_call(size: int = 10) -> dict:
    return {"trajectory": [{"role": "user", "content": "cancel it"}],
            "call": {"name": "cancel_reservation",
                     "arguments": {"reservation_id": "35V5SM", "note": "x" * size}}}


def test_the_contract_route_is_rate_limited(contract, tmp_path):  # noqa: F811
    log = ContractCheckLog(tmp_path / "checks.jsonl")
    with _client(contract, log, contract_rate=2.0) as http:
        answers = [http.post(f"/v1/contracts/{contract.name}/check", json=_blocked_call())
                   for _ in range(12)]
    codes = [a.status_code for a in answers]
    assert codes.count(200) >= 4 and 429 in codes, codes  # a burst of 4, then 2 a second
    busy = next(a for a in answers if a.status_code == 429)
    assert busy.headers["retry-after"] == "1" and "contract_rate" in busy.json()["hint"]
    rows, _ = log.read()
    assert len(rows) == codes.count(200)  # only admitted checks reach the log


def test_a_blocked_call_is_logged_as_a_bounded_digest(contract, tmp_path):  # noqa: F811
    log = ContractCheckLog(tmp_path / "checks.jsonl")
    big = _blocked_call(3 * 1024 * 1024)
    with _client(contract, log) as http:
        answer = http.post(f"/v1/contracts/{contract.name}/check", json=big)
    assert answer.status_code == 200 and answer.json()["recorded"]
    line = (tmp_path / "checks.jsonl").read_bytes()
    assert len(line) < 20_000, len(line)  # was a 3 MB line
    [row], _ = log.read()
    args = json.dumps(big["call"]["arguments"], ensure_ascii=False, sort_keys=True)
    digest = row["call"]["args_digest"]
    assert digest["sha256"] == hashlib.sha256(args.encode()).hexdigest()
    assert digest["bytes"] == len(args.encode()) and len(digest["excerpt"]) == 500
    assert row["call"]["name"] == "cancel_reservation" and "args" not in row["call"]


def test_the_blocked_call_log_rotates(contract, tmp_path):  # noqa: F811
    log = ContractCheckLog(tmp_path / "checks.jsonl", max_bytes=4000, keep=2)
    check = check_call(contract, [], Action.tool("cancel_reservation", {"reservation_id": "X"}))
    for i in range(40):
        log.record(check, actor=Actor.signed_in(f"ana{i:02d}", "analyst"))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["checks.jsonl", "checks.jsonl.1", "checks.jsonl.2"]
    assert all(p.stat().st_size <= 4000 for p in tmp_path.iterdir())
    rows, problems = log.read()
    assert problems == [] and rows[0]["actor"] == "ana39"  # newest first, across the files
    assert [r["actor"] for r in rows] == sorted((r["actor"] for r in rows), reverse=True)
    assert log.read(limit=3)[0] == rows[:3]

