"""Batch-audit throughput against fake model servers with a fixed latency, as cases/s.

    .venv/bin/python bench/scale.py [--cases 48] [--latency 0.2] [--slots 2]

Every model server here is a ``FakeChatServer`` that answers each judge request after
``--latency`` seconds and serves at most ``--slots`` requests at once (like a vLLM or
llama.cpp server with that many parallel slots; the rest queue). Parts:

1. local engine, one server, at 1, 2, 4, 8 concurrent cases: how cases/s grows with
   concurrency and where it stops (at slots / latency, the server's own limit); then the
   Ray engine (local Ray, 1, 2, 4, 8 workers) on the same server, with the time until its
   first trace (a fresh actor pool per run: each actor imports the workbench and litellm);
2. the litellm Router over 3 such servers (a fleet role) at the same concurrencies: the
   ceiling moves to 3 x slots / latency;
3. the Router at concurrency 8 with one of the 3 servers killed a third of the way in:
   each server's share of the answered calls, and whether any case was lost or doubled.

Figures are from one run on one machine; compare within the run.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit.cases import load_cases  # noqa: E402
from workbench.audit.pipeline import AuditOptions  # noqa: E402
from workbench.audit.policy import AuditIndex  # noqa: E402
from workbench.audit.runner import run_audit  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.commands._common import load_index_or_fail  # noqa: E402
from workbench.llm import Gateway, load_config  # noqa: E402
from workbench.llm.fake_server import FakeChatServer, reply, role_env  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"
VERDICT = {"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"}
LEVELS = (1, 2, 4, 8)


def slotted(latency: float, slots: int):
    """A responder that holds one of ``slots`` for ``latency`` seconds per request."""
    gate = threading.BoundedSemaphore(slots)

    def answer(_body: dict) -> object:
        with gate:
            time.sleep(latency)
        return reply(VERDICT)

    return answer


def make_cases(n: int, folder: Path) -> Path:
    base = [json.loads(line) for line in (FIX / "merchant_cases.jsonl").read_text().splitlines()]
    path = folder / f"cases_{n}.jsonl"
    path.write_text(
        "".join(json.dumps(dict(base[i % len(base)], id=f"case-{i:04d}")) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


def audit(env: dict[str, str], cases_path: Path, out: Path, concurrency: int, on_trace=None,
          ray_workers: int = 0):
    env = dict(env, WORKBENCH_JUDGE_CONCURRENCY=str(concurrency))
    config = load_config(env=env)
    gateway = Gateway(config)
    policy = load_index_or_fail(str(FIX / "merchant_index.json"))
    index = AuditIndex(policy)
    engine = None
    if ray_workers:
        from workbench.audit.ray_engine import RayEngine

        engine = RayEngine(policy.to_dict(), functools.partial(Gateway, config), workers=ray_workers)
    started = time.perf_counter()
    try:
        summary = run_audit(load_cases(cases_path), index, "cdg", out, gateway, AuditOptions(),
                            concurrency=concurrency, on_trace=on_trace, engine=engine)
    finally:
        gateway.close()
    return summary, time.perf_counter() - started, gateway


def fleet_env(bases: list[str]) -> dict[str, str]:
    return {
        "WORKBENCH_JUDGE_MODEL": "openai/fake-model",
        "WORKBENCH_JUDGE_ENDPOINTS": ",".join(bases),
        "WORKBENCH_JUDGE_RETRY_BACKOFF": "0.01",
        "WORKBENCH_JUDGE_RETRIES": "2",
        "WORKBENCH_JUDGE_TIMEOUT": "10",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=48)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray engine")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    cases_path = make_cases(args.cases, tmp)
    ceiling = args.slots / args.latency
    print(f"{args.cases} cases, {args.latency * 1000:.0f} ms per judge call, {args.slots} slots per "
          f"server (one server's ceiling {ceiling:.1f} cases/s)")

    with FakeChatServer(default=slotted(args.latency, args.slots)) as srv:
        env = role_env(srv.api_base, role="judge", retries=2, timeout=10)
        audit(env, make_cases(2, tmp), tmp / "warm.jsonl", 1)  # imports, first connection
        print("\n1. local engine, one server")
        base_rate = None
        for c in LEVELS:
            summary, secs, _ = audit(env, cases_path, tmp / f"local_{c}.jsonl", c)
            rate = summary.done / secs
            base_rate = base_rate or rate
            print(f"   concurrency {c}: {rate:6.2f} cases/s  x{rate / base_rate:4.2f} of c=1  "
                  f"({summary.done} audited, errors {summary.errors or 'none'})")
        if not args.no_ray:
            import ray

            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            print("   Ray engine (local Ray), same server; first trace = actor start-up + one block")
            for c in LEVELS:
                first: list[float] = []
                t0 = time.perf_counter()

                def note_first(_trace, first=first, t0=t0) -> None:
                    if not first:
                        first.append(time.perf_counter() - t0)

                summary, secs, _ = audit(env, cases_path, tmp / f"ray_{c}.jsonl", c, note_first,
                                         ray_workers=c)
                print(f"   ray workers {c}: {summary.done / secs:6.2f} cases/s, first trace after "
                      f"{first[0]:.1f} s (errors {summary.errors or 'none'})")
            ray.shutdown()

    servers = [FakeChatServer(default=slotted(args.latency, args.slots)).start() for _ in range(3)]
    bases = [s.api_base for s in servers]
    try:
        print("\n2. litellm Router over 3 servers")
        for c in LEVELS:
            summary, secs, gw = audit(fleet_env(bases), cases_path, tmp / f"fleet_{c}.jsonl", c)
            calls = {b: s.calls for b, s in gw.endpoint_stats("judge").items()}
            share = " ".join(f"{calls.get(b, 0) / max(1, sum(calls.values())):.2f}" for b in bases)
            print(f"   concurrency {c}: {summary.done / secs:6.2f} cases/s  share {share}")

        print("\n3. Router at concurrency 8, server 1 killed after a third of the cases")
        out = tmp / "fleet_kill.jsonl"
        seen = [0]

        def kill_at_a_third(_trace) -> None:
            seen[0] += 1
            if seen[0] == args.cases // 3:
                servers[0].kill()

        summary, secs, gw = audit(fleet_env(bases), cases_path, out, 8, kill_at_a_third)
        traces, _problems = read_traces(out)
        ids = Counter(t.id for t in traces)
        judged = sum(1 for t in traces if t.verdict is not None)
        stats = gw.endpoint_stats("judge")
        answered = {b: stats[b].calls - stats[b].failures for b in bases}
        total = sum(answered.values())
        for i, b in enumerate(bases):
            print(f"   server {i + 1}: answered {answered[b]:3d} ({answered[b] / total:.2f}), "
                  f"failed attempts {stats[b].failures}")
        print(f"   {summary.done / secs:.2f} cases/s; {judged}/{args.cases} judged, "
              f"{args.cases - len(ids)} lost, {sum(n - 1 for n in ids.values())} duplicated")
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
