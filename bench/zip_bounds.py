"""A zip bomb of SKILLs is refused fast and small (issue 36).

Builds the archive of the issue: 100 ``<name>/SKILL.md`` members of 19 MB of repeated text
each (a few MB packed), then, each in a fresh Python process, reads it the three ways a user
can hand it over — ``workbench extract ZIP`` (the command, end to end), ``load_sources``
(what the Skills page calls on the saved upload) and ``load_uploads`` (bytes in memory) — and
prints the time to the refusal, the process's peak resident memory (``ru_maxrss``) and the
Python allocations' peak during the call (tracemalloc). Goal: refused in < 5 s with peak
memory < 300 MB (it took > 3.9 GB before the bounds).

Run: ``python bench/zip_bounds.py [--members 100] [--member-mb 19]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, resource, sys, time, tracemalloc
from pathlib import Path
how, path = sys.argv[1], sys.argv[2]
from workbench.extract import SkillSourceError, load_sources, load_uploads
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tracemalloc.start()
t = time.perf_counter()
try:
    if how == "load_uploads":
        load_uploads([(Path(path).name, Path(path).read_bytes())])
    else:
        load_sources([path])
    outcome = "accepted"
except SkillSourceError as exc:
    outcome = str(exc)
seconds = time.perf_counter() - t
peak = tracemalloc.get_traced_memory()[1] / 2**20
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mb": base, "traced_peak_mb": peak, "outcome": outcome}))
"""

CLI = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "workbench.cli", "extract", sys.argv[1], "--out",
                       sys.argv[2], "--quiet"], capture_output=True, text=True)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "exit": done.returncode, "outcome": done.stderr.strip()[-400:]}))
"""


def build(path: Path, members: int, member_mb: int) -> None:
    line = b"Refunds are issued to the original payment method within five days.\n"
    body = b"---\nname: %s\ndescription: filler\n---\n\n" + line * (member_mb * 2**20 // len(line))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for i in range(members):
            name = f"skill-{i:03d}"
            zf.writestr(f"{name}/SKILL.md", body.replace(b"%s", name.encode(), 1))


def probe(code: str, *args: str, env_extra: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--member-mb", type=int, default=19)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        zpath = Path(tmp) / "bomb.zip"
        t = time.perf_counter()
        build(zpath, args.members, args.member_mb)
        print(f"archive: {args.members} members x {args.member_mb} MB unpacked, "
              f"{zpath.stat().st_size / 2**20:.1f} MB packed (built in {time.perf_counter() - t:.1f} s)")
        # Default limits (the ratio refuses first), then with the ratio limit lifted, so the
        # total-size bound is what refuses.
        for label, extra in (("default limits", {}),
                             ("ratio limit lifted", {"WORKBENCH_ZIP_MAX_RATIO": "100000"})):
            rows = [("workbench extract", probe(CLI, str(zpath), str(Path(tmp) / "index.json"),
                                                env_extra=extra))]
            for how in ("load_sources", "load_uploads"):
                rows.append((how, probe(PROBE, how, str(zpath), env_extra=extra)))
            print(f"\n{label}:\n{'path':<18} {'seconds':>8} {'peak RSS MB':>12} {'traced MB':>10}  outcome")
            for name, r in rows:
                traced = f"{r['traced_peak_mb']:.1f}" if "traced_peak_mb" in r else "-"
                print(f"{name:<18} {r['seconds']:>8.2f} {r['rss_mb']:>12.1f} {traced:>10}  "
                      f"{r['outcome'][:170]}")


if __name__ == "__main__":
    main()
