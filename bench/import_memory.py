"""Peak memory of ``workbench import-cases`` (and ``audit --limit``) against input size.

Issue 45 item 6: the importers copied the whole history into every reply's case (a
5,000-message OpenAI log took 1.6 GB, 10,000 ran out of memory) and read a 1,000,000-row CSV
into lists (MemoryError; ``audit --limit 50`` on it still used 1.26 GB). This script writes
the inputs into a temporary folder, runs each command as a subprocess on a fresh database
and reports its peak RSS (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``: each command
runs in its own short-lived child so the maximum is that command's), the exit status, the
database size and whether a traceback was printed.

    python bench/import_memory.py                      # the default sizes (a few minutes)
    python bench/import_memory.py --quick              # small sizes only
    python bench/import_memory.py --repo /tmp/before   # another checkout (the "before" run)

Measured on a loaded 2-core machine (peak RSS of the command; ~330 MB of it is the CLI's
imports; ``import-cases`` into a fresh SQLite file)::

    input                             file     before (HEAD 4a5cc5e)          after
    openai, 1 conversation,  1,000    0.1 MB    375 MB,  22 MB db           348 MB,  16 MB db
    openai, 1 conversation,  2,500    0.2 MB    623 MB, 136 MB db           378 MB,  47 MB db
    openai, 1 conversation,  5,000    0.4 MB   1518 MB, 542 MB db           426 MB,  98 MB db
    openai, 1 conversation, 10,000    0.9 MB   2692 MB, MemoryError         536 MB, 201 MB db
    openai, 1 conversation, 20,000    1.7 MB   (not run)                    737 MB, 406 MB db
    csv --map,    10,000 rows         1.2 MB    371 MB                      373 MB
    csv --map,   100,000 rows          12 MB    772 MB                      576 MB
    csv --map,   250,000 rows          31 MB   (not run)                    916 MB
    csv --map, 1,000,000 rows         122 MB   2706 MB, MemoryError         339 MB, exit 2 (more
                                                                            than 250,000 cases)
    audit --limit 50, 1,000,000 rows  122 MB   1550 MB                      328 MB

What still grows with the dataset is ``store.audit_repo.save_cases``: it reads every stored
case of the dataset on each call (each batch), hence the refusal past 250,000 cases.

Every child runs under an address-space limit (``--limit-gb``, default 3) so an importer
that still grows with the square of the conversation fails with MemoryError instead of
taking the machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("refund order booking cancel passenger baggage policy verify identity member gold "
         "silver flight change fee voucher compensation delay agent customer ticket").split()


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_openai(path: Path, messages: int) -> None:
    """One conversation of ``messages`` messages (user and assistant in turn, ~45 characters
    each): the shape of a long agent session logged as one JSONL line."""
    rng = random.Random(messages)
    msgs = [{"role": "system", "content": "You are a helpful airline agent."}]
    for i in range(messages):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant",
                     "content": _sentence(rng, 7)})
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"id": "long", "messages": msgs}) + "\n")


def write_csv(path: Path, rows: int) -> None:
    """``rows`` rows of ticket,question,answer,qa (~120 bytes a row)."""
    rng = random.Random(rows)
    with open(path, "w", encoding="utf-8", newline="") as out:
        w = csv.writer(out)
        w.writerow(["ticket", "question", "answer", "qa"])
        for i in range(rows):
            w.writerow([f"t{i}", _sentence(rng, 6), _sentence(rng, 8),
                        "violation" if i % 7 == 0 else "compliant"])


def _limit_memory(limit_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return apply


def run_child(argv: list[str], repo: Path, limit_bytes: int) -> dict:
    """Run ``workbench ARGV`` from ``repo`` in a child of a fresh helper process, so that
    RUSAGE_CHILDREN of the helper is this command's peak alone."""
    code = (
        "import resource, subprocess, sys, json, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'rc': p.returncode, 'peak_kb': peak, 's': time.monotonic() - t,"
        " 'stderr': p.stderr[-2000:], 'stdout': p.stdout[-500:]}))\n"
    )
    child = [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); "
             "from workbench.cli import main; raise SystemExit(main())", *argv]
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("WORKBENCH_DB", None)
    out = subprocess.run([sys.executable, "-c", code, *child], cwd=repo, env=env,
                         capture_output=True, text=True, preexec_fn=_limit_memory(limit_bytes))
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=str(ROOT), help="checkout to run (default: this one)")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--limit-gb", type=float, default=3.0,
                    help="address-space limit of each command (default 3)")
    ap.add_argument("--openai", default=None, help="message counts, comma-separated")
    ap.add_argument("--csv", default=None, help="row counts, comma-separated")
    args = ap.parse_args()
    repo = Path(args.repo).resolve()
    limit = int(args.limit_gb * 1024 ** 3)
    sizes_openai = ([int(s) for s in args.openai.split(",")] if args.openai
                    else [500, 1000] if args.quick else [1000, 2500, 5000, 10000])
    sizes_csv = ([int(s) for s in args.csv.split(",")] if args.csv
                 else [10_000] if args.quick else [10_000, 100_000, 1_000_000])
    index = ROOT / "fixtures" / "demo" / "index.json"
    print(f"repo {repo}; each command limited to {args.limit_gb:g} GB of address space\n")
    print(f"{'input':<34} {'file':>9} {'command':<24} {'rc':>3} {'peak RSS':>9} "
          f"{'db':>9} {'time':>7}  note")
    with tempfile.TemporaryDirectory(prefix="import-memory-") as tmp:
        work = Path(tmp)
        plan = []
        for n in sizes_openai:
            f = work / f"chat-{n}.jsonl"
            write_openai(f, n)
            plan.append((f"openai, 1 conversation, {n:,} msgs", f,
                         ["--format", "openai"], "import-cases"))
        for n in sizes_csv:
            f = work / f"rows-{n}.csv"
            write_csv(f, n)
            mapping = ["--map", "id=ticket,history=question,reply=answer,label=qa"]
            plan.append((f"csv --map, {n:,} rows", f, mapping, "import-cases"))
            if n == max(sizes_csv):
                plan.append((f"csv --map, {n:,} rows", f, mapping, "audit --limit 50"))
        for label, f, fmt, command in plan:
            db = work / f"{f.stem}-{command.split()[0]}.db"
            if command == "import-cases":
                argv = ["import-cases", str(f), "--dataset", "bench", "--db",
                        f"sqlite:///{db}", *fmt]
            else:
                argv = ["audit", "--index", str(index), "--cases", str(f), *fmt,
                        "--strategy", "cdg", "--keywords", "lexical", "--no-judge",
                        "--empty-seed", "all-rules", "--limit", "50",
                        "--out", str(work / "traces.jsonl")]
            started = time.monotonic()
            r = run_child(argv, repo, limit)
            size = db.stat().st_size if db.exists() else 0
            err = r["stderr"]
            note = ("TRACEBACK " + err.strip().splitlines()[-1][:60] if "Traceback" in err
                    else err.strip().splitlines()[-1][:90] if r["rc"] else r["stdout"].strip()
                    .splitlines()[-1][:60] if r["stdout"].strip() else "")
            print(f"{label:<34} {f.stat().st_size / 1e6:>7.1f}MB {command:<24} {r['rc']:>3} "
                  f"{r['peak_kb'] / 1024:>7.0f}MB {size / 1e6:>7.1f}MB "
                  f"{time.monotonic() - started:>6.1f}s  {note}", flush=True)
            if db.exists():
                db.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
