"""``kill -9`` of a batch audit at random points, then resume (issue #15): every case ends with
exactly one trace in the file and in the store, none lost, none duplicated, none corrupted.

The judge is the fake OpenAI-compatible server with a fixed latency, so each case takes a
known time and the kills land mid-run: after a random number of traces is written, and once
in the ``--store`` step at the end.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.llm.fake_server import FakeChatServer, reply, role_env

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "audit"
N_CASES = 24
LATENCY_S = 0.08


def _cases(path: Path) -> list[str]:
    """``N_CASES`` cases: the merchant fixture's cases under new ids."""
    base = [json.loads(line) for line in (FIX / "merchant_cases.jsonl").read_text().splitlines()]
    ids, lines = [], []
    for i in range(N_CASES):
        case = dict(base[i % len(base)], id=f"case-{i:02d}")
        ids.append(case["id"])
        lines.append(json.dumps(case))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, cwd=log.parent, stdout=subprocess.DEVNULL,
                            stderr=open(log, "wb"))  # noqa: SIM115 (closed with the process)


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(15)
    ids = _cases(tmp_path / "cases.jsonl")
    out, db = tmp_path / "traces.jsonl", tmp_path / "wb.db"
    verdict = replace(reply({"violation": False, "violated_rules": [], "reason": "complies"}),
                      delay_s=LATENCY_S)
    with FakeChatServer(default=verdict) as srv:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("WORKBENCH_") and k != "PYTHONPATH"}
        env.update(role_env(srv.api_base, role="judge", retries=0))
        env.update(WORKBENCH_DB=str(db), PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-m", "workbench.cli", "audit", "--index",
               str(FIX / "merchant_index.json"), "--cases", str(tmp_path / "cases.jsonl"),
               "--strategy", "cdg", "--out", str(out), "--store", "ds", "--run-id", "R",
               "--concurrency", "2", "--no-cache"]
        kills = []
        # Two kills while traces are being written, each after a random number of new ones.
        for round_ in range(2):
            before = _lines(out)
            target = min(N_CASES - 1, before + rng.randint(1, 5))
            proc = _start(cmd, env, tmp_path / f"run{round_}.log")
            deadline = time.monotonic() + 120
            while _lines(out) < target and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, LATENCY_S))  # sometimes mid-write of the next line
            assert proc.poll() is None, (tmp_path / f"run{round_}.log").read_text()
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            kills.append(_lines(out))
        # A fourth kill once every case is audited: during (or right before) --store.
        log = tmp_path / "run2.log"
        proc = _start(cmd, env, log)
        deadline = time.monotonic() + 120
        while b"audited (" not in log.read_bytes() and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.002)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        store_killed = proc.returncode == -signal.SIGKILL
        # Resume to the end (a re-run of a finished run storing nothing is in test_store_writes).
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        judged = len(srv.requests)
    print(f"kills after {kills} traces; store step killed: {store_killed}; {judged} judge calls "
          f"for {N_CASES} cases; last run: {done.stderr.strip().splitlines()[-2:]}")

    assert kills == sorted(kills) and kills[-1] < N_CASES  # the kills did land mid-run
    # The file: every line but a torn one parses, and each case has exactly one trace.
    from workbench.audit.runner import read_traces

    traces = read_traces(out)
    assert sorted(t["id"] for t in traces) == ids
    assert all(t["error"] is None and t["verdict"]["reason"] == "complies" for t in traces)
    torn = [line for line in out.read_text(encoding="utf-8", errors="replace").splitlines()
            if line.strip() and not _parses(line)]
    assert len(torn) <= len(kills)  # at most one torn line per kill, each skipped
    # A case is judged again only if its trace was lost to a kill.
    assert N_CASES <= judged <= N_CASES + 2 * len(kills)
    # The store: one trace per case for run R, each readable and the same as in the file.
    from store.audit_repo import load_cases, load_traces
    from store.db import make_engine

    engine = make_engine(f"sqlite:///{db}")
    stored = load_traces(engine, run_id="R")
    assert sorted(t.id for t in stored) == ids
    by_id = {t["id"]: t for t in traces}
    assert all(t.to_dict() == by_id[t.id] for t in stored)
    assert sorted(c.id for c in load_cases(engine, "ds")) == ids
    engine.dispose()


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True
