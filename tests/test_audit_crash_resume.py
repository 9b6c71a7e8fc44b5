"""``kill -9`` of a batch audit at random points, then resume (issue #15): every case ends with
exactly one trace in the file and in the store, none lost, none duplicated, none corrupted.

The judge is the fake OpenAI-compatible server with a fixed latency, so each case takes a
known time and the kills land mid-run: after a random number of traces is written, and once
in the ``--store`` step at the end. Each ``workbench audit`` runs in a process forked from a
server that imported the CLI and litellm once (``fork_context``): the same CLI code and the
same SIGKILL, without paying seconds of imports per start.
"""

from __future__ import annotations

import json
import os
import random
import signal
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


def _audit(args: list[str], env: dict[str, str], log: str) -> None:
    """Child: ``workbench <args>`` with ``env`` as its WORKBENCH_* settings, stderr to ``log``."""
    os.chdir(Path(log).parent)
    os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    for name in [k for k in os.environ if k.startswith("WORKBENCH_")]:
        del os.environ[name]
    os.environ.update(env)
    from workbench.cli import main

    sys.exit(main(args))


def _start(context, args: list[str], env: dict[str, str], log: Path):
    proc = context.Process(target=_audit, args=(args, env, str(log)))
    proc.start()
    return proc


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_loses_and_duplicates_nothing(tmp_path, fork_context):
    context = fork_context
    rng = random.Random(15)
    ids = _cases(tmp_path / "cases.jsonl")
    out, db = tmp_path / "traces.jsonl", tmp_path / "wb.db"
    verdict = replace(reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"}),
                      delay_s=LATENCY_S)
    with FakeChatServer(default=verdict) as srv:
        env = dict(role_env(srv.api_base, role="judge", retries=0), WORKBENCH_DB=str(db))
        cmd = ["audit", "--index",
               str(FIX / "merchant_index.json"), "--cases", str(tmp_path / "cases.jsonl"),
               "--strategy", "cdg", "--out", str(out), "--store", "ds", "--run-id", "R",
               "--concurrency", "2", "--no-cache"]
        kills = []
        # Two kills while traces are being written, each after a random number of new ones.
        for round_ in range(2):
            before = _lines(out)
            target = min(N_CASES - 1, before + rng.randint(1, 5))
            proc = _start(context, cmd, env, tmp_path / f"run{round_}.log")
            deadline = time.monotonic() + 120
            while _lines(out) < target and proc.is_alive() and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, LATENCY_S))  # sometimes mid-write of the next line
            assert proc.is_alive(), (tmp_path / f"run{round_}.log").read_text()
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(30)
            kills.append(_lines(out))
        # A third kill once every case is audited: during (or right before) --store.
        log = tmp_path / "run2.log"
        proc = _start(context, cmd, env, log)
        deadline = time.monotonic() + 120
        while (not log.is_file() or b"audited (" not in log.read_bytes()) and proc.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.002)
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        store_killed = proc.exitcode == -signal.SIGKILL
        # Resume to the end (a re-run of a finished run storing nothing is in test_store_writes).
        log = tmp_path / "run3.log"
        proc = _start(context, cmd, env, log)
        proc.join(120)
        assert proc.exitcode == 0, log.read_text()
        judged = len(srv.requests)
    last = log.read_text().strip().splitlines()[-2:]
    print(f"kills after {kills} traces; store step killed: {store_killed}; {judged} judge calls "
          f"for {N_CASES} cases; last run: {last}")

    assert kills == sorted(kills) and kills[-1] < N_CASES  # the kills did land mid-run
    # The file: every line but a torn one parses, and each case has exactly one trace.
    from workbench.audit.trace_file import read_traces

    traces, _torn = read_traces(out)
    assert sorted(t.id for t in traces) == ids
    assert all(t.error is None and t.verdict.reason == "complies" for t in traces)
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
    by_id = {t.id: t for t in traces}
    assert all(t == by_id[t.id] for t in stored)
    assert sorted(c.id for c in load_cases(engine, "ds")) == ids
    engine.dispose()


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True
