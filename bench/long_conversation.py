"""Audit time without the judge on long conversations (issue 36).

Takes the first demo case and repeats its turns to 150, 600, 2,000 and 20,000 turns, then
times ``audit_case(..., judge_mode="none")`` with the embedded judge's default window
(16,384 tokens: ctx_size 32768 / 2 slots), which is what ``workbench audit --no-judge``
does per case: lexical keywords, routing, seeds and closure, rendering, and fitting the
conversation into the window (dropping the oldest turns). The figure is each size's time
and its ratio to the 150-turn case within this run (goal: within 5x at 2,000 turns); the sizes
are timed in turn, ``--repeat`` rounds, and each figure is the median of its rounds.

Run: ``python bench/long_conversation.py [--sizes 150,600,2000,20000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit.cases import Turn, load_cases  # noqa: E402
from workbench.audit.pipeline import AuditOptions, audit_case  # noqa: E402
from workbench.audit.policy import AuditIndex  # noqa: E402
from workbench.audit.window import JudgeWindow  # noqa: E402
from workbench.graph import PolicyIndex  # noqa: E402
from workbench.vocabulary import JudgeMode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def long_case(case, turns: int):
    base = case.turns
    context = [Turn(base[i % len(base)].role, f"({i}) {base[i % len(base)].content}")
               for i in range(turns)]
    return replace(case, id=f"{case.id}-x{turns}", context=context)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="150,600,2000,20000")
    ap.add_argument("--repeat", type=int, default=7, help="rounds over the sizes (medians count)")
    args = ap.parse_args()
    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures/demo/index.json"))
    case = load_cases(ROOT / "fixtures/demo/cases.jsonl")[0]
    opts = AuditOptions(judge_mode=JudgeMode.NONE,
                        window=JudgeWindow(16384, "embedded default slot", 512))
    audit_case(case, index, "cdg", None, opts)  # warm: tokenizer, word indexes
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = {n: long_case(case, n) for n in sizes}
    times: dict[int, list[float]] = {n: [] for n in sizes}
    traces = {}
    # Round-robin over the sizes, so a change in the machine's load (it is shared) falls on
    # every size alike and the ratios stay comparable.
    for _ in range(args.repeat):
        for n in sizes:
            t = time.perf_counter()
            # a fresh object each time: nothing counted for the last run is reused
            traces[n] = audit_case(replace(cases[n]), index, "cdg", None, opts)
            times[n].append(time.perf_counter() - t)
    base = statistics.median(times[sizes[0]])
    print(f"{'turns':>7} {'median s':>9} {'ratio':>6}  dropped  error")
    for n in sizes:
        med, trace = statistics.median(times[n]), traces[n]
        fit = trace.window
        print(f"{n:>7} {med:>9.3f} {med / base:>6.2f}  {fit.turns_dropped if fit else '-':>7}  "
              f"{trace.error.kind if trace.error else '-'}", flush=True)


if __name__ == "__main__":
    main()
