"""The API's write-ahead queue (issue 47 item 4): a request is answered once its record is
fsynced, stored by a writer thread after; a server killed with SIGKILL mid-load loses no
answered request (the next start stores what the database lacks, once each); a record torn
by the kill was never answered and is skipped; the writer runs the alert rules."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from store import audit_repo, repo
from store.db import make_engine
from workbench.api.service import MemoryTraceStore
from workbench.api.write_ahead import WriteAheadError, WriteAheadStore
from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE, Actor, NotAllowed

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
API = Actor.signed_in("api", "analyst")


def record(i: int) -> tuple[AuditCase, AuditTrace]:
    return AuditCase(id=f"api-{i}", model_response=f"reply {i}"), AuditTrace(id=f"api-{i}", strategy="cdg")


class SlowStore(MemoryTraceStore):
    """Holds every save until ``release`` is set (a database that is slow or locked)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def save(self, case, trace, *, actor):
        self.release.wait()
        super().save(case, trace, actor=actor)


def crash(store: WriteAheadStore) -> None:
    """What SIGKILL leaves: the log on disk, nothing flushed to the database, the lock gone."""
    fcntl.flock(store._lock_file, fcntl.LOCK_UN)


def test_answered_records_survive_a_crash_and_are_stored_once(tmp_path):
    slow = SlowStore()
    wal = WriteAheadStore(slow, tmp_path / "q", on_stored=lambda *_: None)
    for i in range(5):
        wal.save(*record(i), actor=API)  # each returns once fsynced
    assert wal.get("api-3")[1].id == "api-3"  # answered, not yet stored: still readable
    crash(wal)
    fresh = MemoryTraceStore()
    fresh.save(*record(0), actor=API)  # stored just before the kill: not stored twice
    again = WriteAheadStore(fresh, tmp_path / "q", on_stored=lambda *_: None)
    assert again.replayed == 4 and sorted(fresh.items) == [f"api-{i}" for i in range(5)]
    assert list((tmp_path / "q").glob("wal-*")) != []  # its own new segment only
    again.close()
    slow.release.set()


def test_a_torn_last_record_is_skipped(tmp_path):
    wal = WriteAheadStore(SlowStore(), tmp_path / "q", on_stored=lambda *_: None)
    wal.save(*record(1), actor=API)
    crash(wal)
    [segment] = (tmp_path / "q").glob("wal-*.jsonl")
    with open(segment, "ab") as f:
        f.write(b'{"actor": ["api", "analyst"], "case": {"id": "api-2"')  # killed mid-write
    fresh = MemoryTraceStore()
    again = WriteAheadStore(fresh, tmp_path / "q", on_stored=lambda *_: None)
    assert sorted(fresh.items) == ["api-1"]
    again.close()


def test_one_server_per_queue_and_the_role_is_checked_before_writing(tmp_path):
    wal = WriteAheadStore(MemoryTraceStore(), tmp_path / "q", on_stored=lambda *_: None)
    with pytest.raises(WriteAheadError, match="another audit API"):
        WriteAheadStore(MemoryTraceStore(), tmp_path / "q")
    with pytest.raises(NotAllowed):
        wal.save(*record(1), actor=Actor.signed_in("ann", "annotator"))
    stored = []
    wal.on_stored = lambda traces, where: stored.extend(t.id for t in traces)
    wal.save(*record(2), actor=API)
    wal.close()  # stores what waits
    assert wal.inner.items.keys() == {"api-2"} and stored == ["api-2"]  # the alert hook ran


# -- a real server, killed with SIGKILL while it is answering --------------------------------------

def start(env) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "api_server.py"),
                             "--judge-mode", "none", "--concurrency", "4", "--queue", "64"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        pytest.fail(f"the API server did not start: {line}{proc.stderr.read()[-3000:]}")
    return proc, int(line.split()[1])


BODY = {"conversation": [{"role": "user", "content": "I want to cancel my basic economy flight."}],
        "reply": "Done: I cancelled reservation ABC123 and refunded it in full."}


async def load(port: int, clients: int, stop: threading.Event, accepted: list[str]) -> int:
    """Requests from ``clients`` until ``stop`` (or the server dies), the trace ids answered
    200 appended to ``accepted``; returns how many requests got no answer."""
    failed = 0

    async def client(k: int, http: httpx.AsyncClient) -> None:
        nonlocal failed
        i = 0
        while not stop.is_set():
            try:
                r = await http.post("/v1/audit", json={**BODY, "client_id": f"c{k}-{i}"})
            except httpx.HTTPError:
                failed += 1
                return  # the server is gone
            if r.status_code == 200:
                accepted.append(r.json()["trace_id"])
            i += 1

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        await asyncio.gather(*[client(k, http) for k in range(clients)])
    return failed


def test_sigkill_during_load_loses_no_accepted_request(tmp_path):
    """The database is held locked by another writer for the whole load, so every answered
    request is in the log only when the server is killed; the restart must store them all."""
    url = f"sqlite:///{tmp_path / 'api.db'}"
    engine = make_engine(url)
    repo.import_index(engine, PolicyIndex.load(DEMO / "index.json"), actor=COMMAND_LINE)
    (tmp_path / "none.toml").write_text("")
    env = {**os.environ, "WORKBENCH_DB": url, "WORKBENCH_CONFIG": str(tmp_path / "none.toml"),
           "WORKBENCH_API_WRITE_AHEAD": str(tmp_path / "wal")}
    env.pop("WORKBENCH_API_TOKEN", None)
    proc, port = start(env)
    blocker = sqlite3.connect(tmp_path / "api.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # a long transaction elsewhere: the writer must wait
    stop, accepted, result = threading.Event(), [], {}
    runner = threading.Thread(target=lambda: result.update(failed=asyncio.run(
        load(port, 8, stop, accepted))))
    runner.start()
    deadline = time.monotonic() + 60
    while len(accepted) < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # mid-load: the clients are still sending
    proc.wait(10)
    stop.set()
    runner.join(60)
    blocker.execute("ROLLBACK")
    blocker.close()
    assert len(accepted) >= 40 and result["failed"] >= 1  # it died under load
    before = {t.id for t in audit_repo.load_traces(engine, run_id="api", dataset="api")}
    assert len(before) < len(accepted)  # the answered requests were in the log only
    # Restart: the log is replayed before serving; then a graceful stop.
    proc, _port = start(env)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    stored = Counter(t.id for t in audit_repo.load_traces(engine, run_id="api", dataset="api"))
    missing = set(accepted) - set(stored)
    assert missing == set(), f"{len(missing)} answered requests lost; server said: {err[-2000:]}"
    assert max(stored.values()) == 1  # none stored twice
    print(f"answered {len(accepted)}, in the database at the kill {len(before)}, after the "
          f"restart {len(stored)} (answered ones lost: 0)")
    engine.dispose()
