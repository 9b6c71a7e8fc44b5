"""Audit API overhead per request, everything except the model, on the 3,467-rule SKILL.

The SKILL and the cases are ``bench/audit.py``'s (3,467 rules, 1,737 require edges). The
app ``workbench api`` serves (``commands.api.build_app``: the SQLite store, the gateway)
runs under a real uvicorn server on loopback; the judge is the fake OpenAI-compatible server
(``workbench.llm.fake_server``), answering at once. One client sends the requests one after
another (so the figure is the cost of a request, not of queueing). Per request:

- **overhead** = client wall time - the judge call as the gateway timed it (litellm's own
  work included in the latter): HTTP, JSON, validation, case building, the pipeline's
  keywords/routing/seeds/closure/rendering, the store write, the response;
- the parts: ``pipeline`` (the audit without its model call), ``store`` (case + trace
  written in one transaction, SQLite on local disk), ``http`` (the rest).

Goal: median overhead < 10 ms. Run: ``python bench/api.py [--requests 200]``
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from workbench.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _bench_audit():
    spec = importlib.util.spec_from_file_location("bench_audit", ROOT / "bench" / "audit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    import argparse as ap

    import httpx
    import uvicorn

    from store import repo
    from store.db import make_engine
    from workbench.commands.api import build_app
    from workbench.graph import PolicyIndex
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import FakeChatServer, reply, role_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default=None,
                        help="SQLite's synchronous pragma for this run (the store's default is "
                        "FULL under WAL: an fsync per commit, most of the store part)")
    args = parser.parse_args()
    bench = _bench_audit()
    skill, sentences = bench.make_skill()
    cases = bench.make_cases(sentences, args.requests + 10)
    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    engine = make_engine(f"sqlite:///{work / 'api.db'}")
    if args.synchronous:
        from sqlalchemy import event

        event.listen(engine, "connect",
                     lambda conn, _rec: conn.cursor().execute(f"PRAGMA synchronous={args.synchronous}"))
        engine.dispose()
    repo.import_index(engine, PolicyIndex([skill]), actor=COMMAND_LINE)
    (work / "none.toml").write_text("")  # the built-in defaults, whatever ./workbench.toml says
    verdict = reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"})
    with FakeChatServer(default=verdict) as judge:
        gateway = Gateway(load_config(work / "none.toml", env=role_env(judge.api_base, role="judge",
                                                                      retries=0)))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ns = ap.Namespace(index=None, host="127.0.0.1", port=port, dataset="bench", run_id="bench",
                          concurrency=2, queue=8, strategy="cdg", judge_mode="whole", no_cache=True)
        app, _settings = build_app(ns, engine=engine, gateway=gateway)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                               lifespan="off"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        overhead, pipeline, store, http, model = [], [], [], [], []
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for i, case in enumerate(cases):
                body = {"conversation": [{"role": t.role, "content": t.content} for t in case.turns],
                        "reply": case.model_response, "policies": ["enterprise"]}
                t0 = time.perf_counter()
                r = client.post("/v1/audit", json=body)
                wall = (time.perf_counter() - t0) * 1000
                r.raise_for_status()
                t = r.json()["timings_ms"]
                if i < 10:
                    continue  # warm-up: first requests build the ranked SKILL, litellm imports
                judged = t["total"] - t["pipeline"]
                model.append(judged)
                overhead.append(wall - judged)
                pipeline.append(t["pipeline"])
                store.append(t["request"] - t["total"])
                http.append(wall - t["request"])
        server.should_exit = True
        thread.join(10)
        gateway.close()

    def line(name, xs):
        return (f"{name:>9}: median {statistics.median(xs):6.2f} ms, "
                f"p90 {statistics.quantiles(xs, n=10)[-1]:6.2f} ms")

    print(f"SKILL: {len(skill.graph)} rules, {len(skill.graph.edges)} edges; "
          f"{len(overhead)} requests timed (after 10 warm-up), one at a time")
    print(line("overhead", overhead))
    print(line("pipeline", pipeline))
    print(line("store", store))
    print(line("http", http))
    print(line("judge", model) + " (fake server + litellm: not overhead)")
    med = statistics.median(overhead)
    print(f"goal median overhead < 10 ms: {'met' if med < 10 else 'NOT met'} ({med:.2f} ms); "
          f"overhead/judge-call ratio {med / statistics.median(model):.2f}")


if __name__ == "__main__":
    main()
