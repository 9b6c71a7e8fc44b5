"""UI latency in real Chromium against a real server (Playwright).

Prints: the time until the Replay page shows the verdict of a demo case (stored trace), and
until the Graph page draws the focused (closure) view of a 250-rule SKILL. Each is the median
of several page loads after one warm-up load. Run: ``python bench/ui.py``.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server, wait_idle  # noqa: E402

RUNS = 5


def synthetic_skill(n_rules: int = 250, seed: int = 3) -> dict:
    """A 250-rule SKILL whose rules each quote one sentence of its source."""
    rnd = random.Random(seed)
    sentences = [f"Rule sentence {i}: when condition {i} holds, the agent must do action {i}."
                 for i in range(n_rules)]
    source = "---\nname: bench-250\ndescription: synthetic 250-rule policy\n---\n# Policy\n" + \
        "\n".join(sentences) + "\n"
    rules, edges = [], []
    for i, s in enumerate(sentences):
        start = source.index(s)
        rules.append({"id": f"B{i:03d}", "condition": f"condition {i} holds",
                      "action": f"do action {i}", "modality": "required",
                      "spans": [{"start": start, "end": start + len(s)}]})
        for _ in range(2 if i > 3 else 0):
            j = rnd.randrange(i)
            edges.append({"source": f"B{i:03d}", "target": f"B{j:03d}", "type": "require"})
    uniq = {(e["source"], e["target"]): e for e in edges}
    return {"name": "bench-250", "description": "synthetic 250-rule policy", "source": source,
            "rules": rules, "edges": list(uniq.values())}


def seed_db(url: str) -> None:
    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case, load_cases
    from workbench.graph import PolicyIndex

    demo = json.loads((ROOT / "fixtures/demo/index.json").read_text())
    demo["skills"].append(synthetic_skill())
    index = PolicyIndex.from_dict(demo)
    eng = make_engine(url)
    repo.import_index(eng, index)
    cases = load_cases(ROOT / "fixtures/demo/cases.jsonl")
    audit_repo.save_cases(eng, "demo", cases)
    trace = audit_case(cases[0], AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    first = next(iter(trace.closure.values()))[0]
    trace.verdict = Verdict(True, f"{first} is violated.", [first])
    audit_repo.save_trace(eng, trace, run_id="bench", dataset="demo")
    eng.dispose()


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        seed_db(url)
        server = Server(url, Path(tmp) / "server.log")
        server.wait()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})

                def replay_once() -> float:
                    t0 = time.perf_counter()
                    page.goto(f"{server.url}/replay")
                    page.locator("[data-testid='stAlertContentError']").filter(
                        has_text="Violation").first.wait_for(timeout=60_000)
                    return time.perf_counter() - t0

                def graph_once() -> float:
                    t0 = time.perf_counter()
                    page.goto(f"{server.url}/graph")
                    wait_idle(page)
                    page.get_by_label("SKILL").first.click()
                    page.get_by_role("option", name="bench-250").click()
                    wait_idle(page)
                    page.frame_locator("iframe").first.locator("canvas").first.wait_for(
                        timeout=60_000)
                    return time.perf_counter() - t0

                results = {}
                for name, fn in (("replay verdict", replay_once), ("graph 250-rule focus", graph_once)):
                    fn()  # warm-up: first script run imports modules, builds caches
                    results[name] = statistics.median(fn() for _ in range(RUNS))
                browser.close()
        finally:
            server.stop()
    for name, sec in results.items():
        print(f"{name}: median {sec:.2f} s over {RUNS} loads")


if __name__ == "__main__":
    main()
