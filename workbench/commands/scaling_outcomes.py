"""``workbench scaling-outcomes``: the outcomes table of the scaling analysis from audit runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbench.commands._common import CliError, action, load_cases_or_fail, load_index_or_fail
from workbench.commands._output import add_force_option, check_output, write_output


def register(subparsers: Any) -> None:
    p = action(
        subparsers, "scaling-outcomes", run,
        help="build a scaling outcomes table (CSV/JSONL) from audit traces of one or more judges",
        description="One row per labelled case and judge: instance, dataset, session, params_b, "
        "complexity (C of the case's SKILL graphs), correct (verdict matches the gold label; a "
        "failed verdict counts incorrect). Feed the result to `workbench scaling fit`.",
    )
    p.add_argument("traces", nargs="*", metavar="TRACES.jsonl",
                   help="traces of `workbench audit --out` (one judge per file)")
    p.add_argument("--cases", metavar="CASES.jsonl", help="the audited cases (with trace files)")
    p.add_argument("--index", metavar="INDEX.json",
                   help="the policy index the cases were audited with (with trace files)")
    p.add_argument("--params-b", type=float, action="append", metavar="B",
                   help="judge size in billions: once for all files, or once per file in order")
    p.add_argument("--store", metavar="DATASET",
                   help="instead of files: the runs, cases and SKILLs of DATASET in the workbench "
                   "database (WORKBENCH_DB), as stored by `workbench audit --store`")
    p.add_argument("--run", action="append", metavar="RUN_ID=B",
                   help="with --store: a stored run and its judge size in billions (repeat per judge)")
    p.add_argument("--dataset", default=None,
                   help="dataset name in the table (default: the cases file's name, or --store)")
    p.add_argument("--strategy", default=None,
                   help="use only traces of this strategy (needed when a file holds several)")
    p.add_argument("--out", required=True, metavar="OUTCOMES.csv",
                   help="output table, .csv or .jsonl; an existing file is replaced only with "
                   "--force")
    add_force_option(p)


def run(args: argparse.Namespace) -> int:
    from workbench.export.sheets import frame_csv
    from workbench.scaling import OutcomesError, outcomes_format, outcomes_from_records

    fmt = outcomes_format(args.out)
    check_output(args.out, force=args.force)  # before any work
    rows, n_traces, n_runs = _from_store(args) if args.store else _from_files(args)
    try:
        table = outcomes_from_records(rows)
    except OutcomesError as exc:
        raise CliError(f"{exc}; no labelled case to score?" if not rows else str(exc)) from None
    out = Path(args.out)
    text = frame_csv(table) if fmt == "csv" else table.to_json(
        orient="records", lines=True, force_ascii=False, double_precision=15)
    done = write_output(out, text, force=args.force)
    failed = int((table["error"] != "").sum()) if "error" in table else 0
    where = f"{n_runs} stored run(s)" if args.store else f"{n_runs} file(s)"
    print(f"[scaling-outcomes] {len(table)} rows from {n_traces} traces in {where}: "
          f"{n_traces - len(table)} unlabelled left out, {failed} without a verdict counted "
          f"incorrect; {done} {out}", file=sys.stderr)
    return 0


def _from_files(args: argparse.Namespace) -> tuple[list[dict], int, int]:
    from workbench.audit.trace_file import read_traces
    from workbench.scaling.from_traces import TracesError, outcomes_from_runs, select_traces

    if args.run:
        raise CliError("--run names a stored run; use it with --store DATASET")
    missing = [flag for flag, value in (("TRACES.jsonl", args.traces), ("--cases", args.cases),
                                        ("--index", args.index), ("--params-b", args.params_b))
               if not value]
    if missing:
        raise CliError(f"missing {', '.join(missing)}: give trace files with --cases, --index and "
                       "--params-b, or read stored runs with --store DATASET --run RUN_ID=B")
    sizes = args.params_b
    if len(sizes) not in (1, len(args.traces)):
        raise CliError(f"{len(sizes)} --params-b values for {len(args.traces)} traces files; give "
                       "one size for all files or one per file, in the same order")
    if any(not b > 0 for b in sizes):
        raise CliError("--params-b must be the judge size in billions, greater than 0")
    index = load_index_or_fail(args.index)
    cases = load_cases_or_fail(args.cases)
    runs = []
    for path, size in zip(args.traces, sizes if len(sizes) > 1 else sizes * len(args.traces), strict=True):
        if not Path(path).exists():
            raise CliError(f"{path}: no such traces file; give the JSONL `workbench audit --out` wrote")
        traces, _problems = read_traces(path)
        if not traces:
            raise CliError(f"{path}: holds no audit traces (one JSON object per line)")
        try:
            chosen = select_traces(traces, args.strategy)
        except TracesError as exc:
            raise CliError(f"{path}: {exc}") from None
        if not chosen:
            raise CliError(f"{path}: no trace of strategy {args.strategy!r}")
        runs.append((chosen, size))
    # One SKILL set per case across all judges, so complexity does not depend on the judge.
    rows = outcomes_from_runs(runs, cases, index, args.dataset or Path(args.cases).stem,
                              names=args.traces)
    return rows, sum(len(chosen) for chosen, _ in runs), len(runs)


def _parse_run(text: str) -> tuple[str, float]:
    run_id, sep, size = text.rpartition("=")
    try:
        value = float(size)
    except ValueError:
        value = -1.0
    if not sep or not run_id or not value > 0:
        raise CliError(f"--run {text!r} must be RUN_ID=B with B the judge size in billions > 0, "
                       "e.g. --run small-judge=1.5")
    return run_id, value


def _from_store(args: argparse.Namespace) -> tuple[list[dict], int, int]:
    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.scaling.from_traces import outcomes_from_runs

    if args.traces or args.cases or args.index or args.params_b:
        raise CliError("--store reads runs, cases and SKILLs from the database; drop the trace "
                       "files, --cases, --index and --params-b (sizes go in --run RUN_ID=B)")
    if not args.run:
        raise CliError("--store needs at least one --run RUN_ID=B (the stored run of each judge)")
    wanted = [_parse_run(text) for text in args.run]
    engine = make_engine()
    try:
        stored = audit_repo.runs(engine, args.store)
        unknown = [run for run, _ in wanted if run not in stored]
        if unknown:
            have = ", ".join(stored) if stored else "none"
            raise CliError(f"no stored run {', '.join(map(repr, unknown))} in dataset {args.store!r} "
                           f"(stored runs: {have}); store one with `workbench audit --store`")
        names = repo.skill_names(engine)
        if not names:
            raise CliError("the database holds no SKILLs, so complexity cannot be computed; "
                           "`workbench import INDEX.json` first")
        index = repo.export_index(engine, names)
        runs = [(audit_repo.load_traces(engine, run_id=run, dataset=args.store), size)
                for run, size in wanted]
        rows = outcomes_from_runs(runs, audit_repo.load_cases(engine, args.store), index,
                                  args.dataset or args.store, strategy=args.strategy)
    finally:
        engine.dispose()
    return rows, sum(len(traces) for traces, _ in runs), len(runs)
