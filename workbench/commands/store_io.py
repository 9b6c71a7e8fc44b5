"""``workbench import INDEX.json`` and ``workbench export-store``: the index file <-> the store."""

from __future__ import annotations

import argparse

from workbench.commands._common import action


def register(sub: argparse._SubParsersAction) -> None:
    p = action(sub, "import", _import, help="import a skillcdg/1 index into the workbench database")
    p.add_argument("index")
    p.add_argument("--db", help="SQLAlchemy URL (default: WORKBENCH_DB or .workbench/workbench.db)")
    p.add_argument("--author", default="import")

    p = action(sub, "export-store", _export,
               help="write the latest SKILL versions in the store as skillcdg/1")
    p.add_argument("--out", required=True)
    p.add_argument("--db")
    p.add_argument("--skill", action="append", help="only this SKILL (repeatable)")

    p = action(sub, "import-cases", _import_cases,
               help="store audit cases (JSONL or .parquet) under a dataset name")
    p.add_argument("cases")
    p.add_argument("--dataset", required=True)
    p.add_argument("--db")

    p = action(sub, "import-traces", _import_traces,
               help="store audit traces (JSONL or .parquet) of a run; idempotent")
    p.add_argument("traces")
    p.add_argument("--dataset", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--db")


def _import(args) -> int:
    from store import repo
    from store.db import make_engine
    from workbench.commands.graph import load_index_or_fail

    # The whole index is read and validated (text, names, rules, edges) before the first
    # write, so a bad SKILL anywhere in the file leaves the store untouched.
    index = load_index_or_fail(args.index)
    engine = make_engine(args.db)
    for saved in repo.import_index(engine, index, author=args.author):
        state = "new version" if saved.created else "unchanged"
        print(f"{saved.name}: version {saved.version} ({state})")
    return 0


def _export(args) -> int:
    from store import repo
    from store.db import make_engine

    engine = make_engine(args.db)
    index = repo.export_index(engine, args.skill)
    index.save(args.out)
    print(f"wrote {len(index)} SKILL(s) to {args.out}")
    return 0


def _import_cases(args) -> int:
    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import CaseFormatError, load_cases
    from workbench.cli import CliError

    try:
        cases = load_cases(args.cases)
    except (OSError, CaseFormatError) as exc:
        raise CliError(f"{exc}. Cases are JSONL in the normalised schema (see README).") from None
    if not cases:
        raise CliError(f"{args.cases}: holds no case (no line with a case); nothing was stored",
                       "give the cases JSONL, one case per line (see README)")
    n = audit_repo.save_cases(make_engine(args.db), args.dataset, cases)
    print(f"{args.dataset}: {n} case(s) stored")
    return 0


def _import_traces(args) -> int:
    import sys
    from pathlib import Path

    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import parquet
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import no_valid_trace, read_traces
    from workbench.cli import CliError
    from workbench.inputs import InputError

    try:
        if parquet.is_parquet(args.traces):
            traces, problems = parquet.read_traces(args.traces), []
        elif not Path(args.traces).exists():
            raise FileNotFoundError(f"{args.traces}: no such traces file")
        else:
            traces, problems = read_traces(args.traces)
    except (InputError, OSError, ValueError) as exc:
        raise CliError(f"{exc}. Traces are the JSONL written by `workbench audit --out`.") from None
    for problem in problems[:20]:
        print(f"warning: {args.traces}: skipped {problem}", file=sys.stderr)
    if len(problems) > 20:
        print(f"warning: {args.traces}: {len(problems) - 20} more line(s) skipped", file=sys.stderr)
    if not traces:
        raise CliError(no_valid_trace(args.traces, problems) + "; nothing was stored",
                       "give the JSONL that `workbench audit --out` writes")
    traces = latest_per_case(traces, key=trace_key)  # a retried case: its newest trace
    # save_traces skips a trace equal to the newest stored one of its case: importing the same
    # file again adds nothing, and a case retried since (its newest trace changed) is updated.
    added = audit_repo.save_traces(make_engine(args.db), traces, args.run_id, args.dataset)
    print(f"{args.run_id}: {added} new trace(s), {len(traces) - added} already stored")
    return 0
