"""RQ3 with accuracy (issue 46 item 2): the embedded judge's accuracy against SKILL length on
CompliBench airlines, for what 2 CPU cores can afford, written as one judged length sweep.

    .venv/bin/python bench/rq3_length_accuracy.py [--sample 6] [--out docs/evaluations/...]

Runs ``workbench evaluate length-sweep --judge`` twice on the same balanced sample (the
sweep's ``judge_sample``: violations and compliant replies alternately, the same cases at
every point): cdg and bm25 at 4K, 8K, 20K and 36K tokens (their contexts stay ~1.5K and
~0.5K tokens however long the SKILL), raw at 4K and 8K only (raw puts the whole SKILL in the
prompt: at ~52 prompt tokens/s a 36K-token SKILL is ~12 minutes of prefill per case, and a
slot of the embedded server, 16K tokens by default (32K over 2 slots), cannot hold it).
Responses go through the database response cache, so a second run replays the first for
free; the model time each point cost is recorded by the sweep (``judge_seconds``, 0 for
cached calls), and the wall time of the first, uncached run is given with ``--note``.

Prints the merged table and writes one ``kind: length-sweep`` result that the Studies page
draws (ACC with its Wilson interval, violation-F1).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
DATA = CORPORA / "complibench" / "data" / "airlines"
FOREIGN = [CORPORA / "tau-bench" / "policies" / "retail_wiki.md",
           CORPORA / "tau2-bench" / "domains" / "airline" / "policy.md",
           CORPORA / "tau2-bench" / "domains" / "banking_knowledge" / "documents"]
RUNS = (("cdg,bm25", "4000,8000,20000,36000"), ("raw", "4000,8000"))


def sweep(strategies: str, lengths: str, sample: int, out: Path) -> dict:
    cmd = [str(ROOT / ".venv" / "bin" / "workbench"), "evaluate", "length-sweep", str(DATA),
           "--foreign", *map(str, FOREIGN), "--lengths", lengths, "--strategies", strategies,
           "--judge", "--sample", str(sample), "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=6)
    parser.add_argument("--out", default=str(ROOT / "docs" / "evaluations"
                                             / "length-sweep-airlines-judged.json"))
    parser.add_argument("--note", default="", help="added to the result's note (e.g. the "
                        "wall time of the first, uncached run)")
    args = parser.parse_args(argv)
    rows, started = [], time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for strategies, lengths in RUNS:
            result = sweep(strategies, lengths, args.sample, Path(tmp) / f"{strategies}.json")
            rows += result["rows"]
    wall = time.monotonic() - started
    model_s = sum(r.get("judge_seconds") or 0 for r in rows)
    if model_s == 0:  # a replay from the cache measured no model time: say nothing, not "0 s"
        for r in rows:
            r["judge_seconds"] = None
    rows.sort(key=lambda r: (r["length"], r["strategy"]))
    note = (f"CompliBench airlines, embedded Qwen2.5-Coder-1.5B judge (whole mode), "
            f"{args.sample} cases judged per point (half violations), the same cases "
            f"everywhere; raw at 4K and 8K only. {args.note}").strip()
    out = {"kind": "length-sweep", "dataset": "airlines", "judged": True,
           "foreign": [f.name for f in FOREIGN], "note": note, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"{'length':>7} {'strategy':>8} {'ACC':>6} {'95% interval':>14} {'F1':>6} {'model s':>8}")
    for r in rows:
        lo, hi = r.get("acc_low"), r.get("acc_high")
        band = f"{lo:.2f}-{hi:.2f}" if lo is not None else "-"
        f1 = f"{r['f1']:.3f}" if r.get("f1") is not None else "-"
        print(f"{r['length']:>7} {r['strategy']:>8} {r['acc']:>6.3f} {band:>14} {f1:>6} "
              f"{r.get('judge_seconds') or 0:>8.0f}")
    print(f"wrote {args.out}; this run: {wall:.0f} s wall, {model_s:.0f} s of uncached model "
          "calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
