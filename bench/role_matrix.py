"""The role matrix of issue 45, as a table: every writing command run as each identity (each
role of the roster, a name not on it, nobody) on a throw-away database. ``ok`` ran (the role
table allows it), ``refused`` exited 2 with nothing written (every table's rows and
workbench.toml compared before and after), ``BYPASS`` ran though the table forbids it,
``WROTE`` was refused but changed something. tests/test_cli_role_matrix.py asserts the same.

    .venv/bin/python bench/role_matrix.py
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from tests.test_cli_role_matrix import IDENTITIES, run_matrix, seed  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        tmp = Path(folder)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rows = run_matrix(seed(tmp / "seed.db"), tmp, mp)
    commands = list(dict.fromkeys(r["command"] for r in rows))
    cell = {(r["identity"], r["command"]): r for r in rows}
    names = [(w or "(nobody)") for w in IDENTITIES]
    width = max(len(c) for c in commands)
    print(f"{'command':<{width}}  " + "  ".join(f"{n:>9}" for n in names))
    print(f"{'':<{width}}  " + "  ".join(f"{cell[(n, commands[0])]['role']:>9}" for n in names))
    for c in commands:
        marks = []
        for n in names:
            r = cell[(n, c)]
            ran = r["exit"] == 0
            marks.append("ok" if ran and r["allowed"] else "BYPASS" if ran else
                         "WROTE" if r["changed"] else "refused" if not r["allowed"] else "FAILED")
        print(f"{c:<{width}}  " + "  ".join(f"{m:>9}" for m in marks))
    refused = [r for r in rows if r["exit"] != 0]
    bypasses = sum(not r["allowed"] and r["exit"] == 0 for r in rows)
    wrote = sum(bool(r["changed"]) for r in refused)
    print(f"\n{len(names)} identities x {len(commands)} commands = {len(rows)} runs: "
          f"{sum(r['exit'] == 0 for r in rows)} ran, {len(refused)} refused, {bypasses} bypasses, "
          f"{wrote} refused runs that changed a row count or row (or workbench.toml)")
    return 1 if bypasses or wrote else 0


if __name__ == "__main__":
    raise SystemExit(main())
