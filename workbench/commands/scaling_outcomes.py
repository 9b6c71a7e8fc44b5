"""``workbench scaling-outcomes``: the outcomes table of the scaling analysis from audit runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbench.cli import CliError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "scaling-outcomes",
        help="build a scaling outcomes table (CSV/JSONL) from audit traces of one or more judges",
        description="One row per labelled case and judge: instance, dataset, session, params_b, "
        "complexity (C of the case's SKILL graphs), correct (verdict matches the gold label; a "
        "failed verdict counts incorrect). Feed the result to `workbench scaling fit`.",
    )
    p.add_argument("traces", nargs="+", metavar="TRACES.jsonl",
                   help="traces of `workbench audit` (one judge per file)")
    p.add_argument("--cases", required=True, metavar="CASES.jsonl", help="the audited cases")
    p.add_argument("--index", required=True, metavar="INDEX.json",
                   help="the policy index the cases were audited with")
    p.add_argument("--params-b", required=True, type=float, action="append", metavar="B",
                   help="judge size in billions: once for all files, or once per file in order")
    p.add_argument("--dataset", default=None,
                   help="dataset name in the table (default: the cases file's name)")
    p.add_argument("--strategy", default=None,
                   help="use only traces of this strategy (needed when a file holds several)")
    p.add_argument("--out", required=True, metavar="OUTCOMES.csv",
                   help="output table, .csv or .jsonl")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.audit.cases import CaseFormatError, load_cases
    from workbench.audit.runner import read_traces
    from workbench.commands.graph import load_index_or_fail
    from workbench.scaling import OutcomesError, outcomes_format, outcomes_from_records
    from workbench.scaling.from_traces import (
        TracesError,
        instance_skills,
        outcomes_from_traces,
        select_traces,
    )

    sizes = args.params_b
    if len(sizes) not in (1, len(args.traces)):
        raise CliError(f"{len(sizes)} --params-b values for {len(args.traces)} traces files; give "
                       "one size for all files or one per file, in the same order")
    if any(not b > 0 for b in sizes):
        raise CliError("--params-b must be the judge size in billions, greater than 0")
    try:
        fmt = outcomes_format(args.out)
    except OutcomesError as exc:
        raise CliError(str(exc)) from None
    index = load_index_or_fail(args.index)
    try:
        cases = load_cases(args.cases)
    except (FileNotFoundError, CaseFormatError) as exc:
        raise CliError(str(exc)) from None
    dataset = args.dataset or Path(args.cases).stem
    runs = []
    for path in args.traces:
        if not Path(path).is_file():
            raise CliError(f"{path}: no such traces file; give the JSONL `workbench audit --out` wrote")
        traces = read_traces(path)
        if not traces:
            raise CliError(f"{path}: holds no audit traces (one JSON object per line)")
        try:
            runs.append(select_traces(traces, args.strategy))
        except TracesError as exc:
            raise CliError(f"{path}: {exc}") from None
        if not runs[-1]:
            raise CliError(f"{path}: no trace of strategy {args.strategy!r}")
    # One SKILL set per case across all judges, so complexity does not depend on the judge.
    skills = instance_skills([t for chosen in runs for t in chosen], cases)
    per_file = sizes if len(sizes) > 1 else sizes * len(runs)
    rows = []
    for path, chosen, size in zip(args.traces, runs, per_file, strict=True):
        try:
            rows += outcomes_from_traces(chosen, cases, index, size, dataset, skills=skills)
        except TracesError as exc:
            raise CliError(f"{path}: {exc}") from None
    try:
        table = outcomes_from_records(rows)
    except OutcomesError as exc:
        raise CliError(f"{exc}; no labelled case to score?" if not rows else str(exc)) from None
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "csv":
            table.to_csv(out, index=False)
        else:
            table.to_json(out, orient="records", lines=True, force_ascii=False, double_precision=15)
    except OSError as exc:
        raise CliError(f"could not write {out}: {exc.strerror}; choose a writable --out") from None
    n_traces = sum(len(chosen) for chosen in runs)
    failed = int((table["error"] != "").sum()) if "error" in table else 0
    print(f"[scaling-outcomes] {len(table)} rows from {n_traces} traces in {len(runs)} file(s): "
          f"{n_traces - len(table)} unlabelled left out, {failed} without a verdict counted "
          f"incorrect; wrote {out}", file=sys.stderr)
    return 0
