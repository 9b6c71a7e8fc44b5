"""``bench/api.py --clients N``: the audit API under N concurrent async clients, --no-judge,
storing before answering vs. the write-ahead log, in one run (see ``bench/api.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_server(env: dict[str, str], *extra: str) -> tuple[subprocess.Popen, int]:
    """``bench/api_server.py`` in its own process; (process, port) once it is serving."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "api_server.py"), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        raise RuntimeError(f"the API server did not start: {line}{proc.stderr.read()[-3000:]}")
    return proc, int(line.split()[1])


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _phase(port: int, bodies: list[dict], clients: int, rate: float | None,
                 seconds: float) -> tuple[list[float], int, float]:
    """Latencies (ms) of every answered request, errors, and the phase's wall seconds."""
    import httpx

    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(k: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        i = k
        interval = 1.0 / rate if rate else 0.0
        next_at = time.perf_counter() + (k / clients) * interval  # spread the clients' phases
        while time.perf_counter() < stop_at:
            if interval:
                await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                next_at += interval
            t0 = time.perf_counter()
            r = await http.post("/v1/audit", json=bodies[i % len(bodies)])
            if r.status_code == 200:
                latencies.append((time.perf_counter() - t0) * 1000)
            else:
                errors += 1
            i += clients

    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60,
                                 limits=limits) as http:
        await asyncio.gather(*[client(k, http) for k in range(clients)])
    return latencies, errors, time.perf_counter() - started


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used: what a request costs, whatever the
    machine's load does to its latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _line(name: str, xs: list[float], errors: int, wall: float) -> str:
    if len(xs) < 20:
        return f"{name:>34}: too few answers ({len(xs)}, {errors} errors)"
    q = statistics.quantiles(xs, n=20)
    return (f"{name:>34}: median {statistics.median(xs):6.2f} ms, p95 {q[-1]:6.2f} ms, "
            f"{len(xs) / wall:6.1f} req/s answered, {errors} errors")


def commit_costs(engine, cases, n: int = 60) -> tuple[float, float]:
    """Median ms of the store's commit of one case + trace (``StoreTraces.save``) and of the
    write-ahead log's append + fsync of the same record, alone (no server)."""
    from workbench.audit.trace import AuditTrace
    from workbench.commands.api import StoreTraces
    from workbench.identity.roles import Actor

    store = StoreTraces(engine, "commit-cost", "commit-cost")
    actor = Actor.signed_in("api", "analyst")
    commits, fsyncs = [], []
    fd, path = tempfile.mkstemp(prefix="bench-wal-")
    with os.fdopen(fd, "ab", buffering=0) as f:
        for i in range(n):
            case = cases[i % len(cases)]
            case = type(case)(**{**case.__dict__, "id": f"cost-{i}"})
            trace = AuditTrace(id=case.id, strategy="cdg")
            t0 = time.perf_counter()
            store.save(case, trace, actor=actor)
            commits.append((time.perf_counter() - t0) * 1000)
            line = json.dumps({"case": case.to_dict(), "trace": trace.to_dict()}).encode() + b"\n"
            t0 = time.perf_counter()
            f.write(line)
            os.fsync(f.fileno())
            fsyncs.append((time.perf_counter() - t0) * 1000)
    os.unlink(path)
    return statistics.median(commits), statistics.median(fsyncs)


def concurrent_bench(args, bench) -> None:
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex
    from workbench.identity.roles import COMMAND_LINE

    skill, sentences = bench.make_skill()
    cases = bench.make_cases(sentences, 200)
    # A short case: one user turn, a reply of a sentence or two.
    bodies = [{"conversation": [{"role": "user", "content": c.turns[0].content[:200]}],
               "reply": c.model_response[:240], "policies": ["enterprise"]} for c in cases]
    work = Path(tempfile.mkdtemp(prefix="bench-api-load-"))
    url = f"sqlite:///{work / 'api.db'}"
    engine = make_engine(url)
    repo.import_index(engine, PolicyIndex([skill]), actor=COMMAND_LINE)
    commit_ms, fsync_ms = commit_costs(engine, cases)
    engine.dispose()
    (work / "none.toml").write_text("")
    env = {**os.environ, "WORKBENCH_DB": url, "WORKBENCH_CONFIG": str(work / "none.toml")}
    env.pop("WORKBENCH_API_TOKEN", None)
    load1 = os.getloadavg()[0]
    print(f"SKILL: {len(skill.graph)} rules; short case: 1 user turn + a reply of <= 240 chars; "
          f"--no-judge (judge_mode none); {args.clients} clients (httpx.AsyncClient), server "
          f"in its own process with concurrency 4, queue 64; load average at start {load1:.2f} "
          f"on {os.cpu_count()} CPUs")
    print(f"store commit of one case + trace (SQLite WAL, synchronous=FULL): median {commit_ms:.2f} "
          f"ms; write-ahead append + fsync of the same record: median {fsync_ms:.2f} ms")
    offered = args.clients * args.rate
    for name, extra_env in (("before: stored before answering", {}),
                            ("after: write-ahead log", {"WORKBENCH_API_WRITE_AHEAD": str(work / "wal")})):
        proc, port = start_server({**env, **extra_env}, "--judge-mode", "none")
        try:
            asyncio.run(_phase(port, bodies, args.clients, None, 2.0))  # warm-up
            cpu0 = cpu_s(proc.pid)
            paced = asyncio.run(_phase(port, bodies, args.clients, args.rate, args.seconds))
            cpu_ms = (cpu_s(proc.pid) - cpu0) * 1000 / max(1, len(paced[0]))
            flat = asyncio.run(_phase(port, bodies, args.clients, None, min(args.seconds, 8.0)))
        finally:
            stop_server(proc)
        print(f"{name} (load average {os.getloadavg()[0]:.2f})")
        print(_line(f"{offered:g} req/s offered", *paced) + f", server CPU {cpu_ms:.2f} ms/request")
        print(_line("no pause (saturation)", *flat))
        paced_lat = paced[0]
        if len(paced_lat) >= 20:
            med, p95 = statistics.median(paced_lat), statistics.quantiles(paced_lat, n=20)[-1]
            met = med < 10 and p95 < 25
            print(f"{'':>34}  goal median < 10 ms and p95 < 25 ms at {offered:g} req/s: "
                  f"{'met' if met else 'NOT met'}")
