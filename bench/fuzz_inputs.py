"""Long fuzz run over every file reader and file-taking CLI entry (issue 15).

    PYTHONPATH=. .venv/bin/python bench/fuzz_inputs.py --examples 300 [--seed 1] [--target NAME]

Prints, per reader: inputs tried, exit 0 / exit 2 counts, tracebacks, hangs (over the time
limit), partial writes (exit 2 but the store changed), and exit-2 messages that do not name
the file; then the distinct tracebacks and problems found. Exit status 1 when any was found.
The generators and entry points are those of ``tests/test_fuzz_inputs.py`` (tests/fuzzing.py).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzzing import TARGETS, TIME_LIMIT_S, run_target  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300, help="inputs per reader")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", action="append", help="only this reader (repeatable)")
    args = parser.parse_args()
    targets = [t for t in TARGETS if not args.target or t.name in args.target]
    rows = []
    found: dict[str, tuple[str, int]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-inputs-") as tmp:
        for target in targets:
            rng = random.Random(f"{args.seed}:{target.name}")
            seed = target.seed()
            counts: Counter[str] = Counter()
            slowest = 0.0
            for i in range(args.examples):
                data = target.mutate(rng, seed)
                out = run_target(target, data, Path(tmp) / f"{target.name.replace(':', '_')}")
                counts["inputs"] += 1
                slowest = max(slowest, out.seconds)
                if out.error:
                    counts["tracebacks"] += 1
                    lines = out.error.strip().splitlines()
                    key = next((ln for ln in reversed(lines) if not ln.startswith(" ")), "")[:200]
                    found.setdefault(f"{target.name}: {key}", (out.error, i))
                    continue
                counts[f"exit {out.code}"] += 1
                if out.seconds > TIME_LIMIT_S:
                    counts["hangs"] += 1
                elif "partial write" in out.problem:
                    counts["partial writes"] += 1
                elif out.problem:
                    counts["unlocated"] += 1
                if out.problem:
                    found.setdefault(f"{target.name}: {out.problem[:160]}", (out.problem, i))
            rows.append((target.name, counts, slowest))
            print(f"  {target.name}: done ({counts['inputs']} inputs)", file=sys.stderr, flush=True)
    cols = ["inputs", "exit 0", "exit 2", "tracebacks", "hangs", "partial writes", "unlocated"]
    print(f"{'reader':<22}" + "".join(f"{c:>15}" for c in cols) + f"{'slowest s':>12}")
    total: Counter[str] = Counter()
    for name, counts, slowest in rows:
        total.update(counts)
        print(f"{name:<22}" + "".join(f"{counts[c]:>15}" for c in cols) + f"{slowest:>12.2f}")
    print(f"{'TOTAL':<22}" + "".join(f"{total[c]:>15}" for c in cols))
    print(f"seed {args.seed}, time limit {TIME_LIMIT_S:.0f} s per input, "
          f"{time.perf_counter() - started:.0f} s in all")
    for key, (detail, i) in found.items():
        print(f"\n--- {key} (input #{i})\n{detail}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
