"""``workbench convert``: cases or traces between JSONL and Parquet, for bulk work."""

from __future__ import annotations

import argparse

from workbench.commands._common import action


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "convert", _convert,
        help="cases or traces between JSONL and Parquet (by file extension)",
        description="Convert audit cases or traces between JSONL and Parquet (.parquet). "
        "Traces from JSONL keep the newest trace per case, as a resumed run means them.",
    )
    p.add_argument("kind", choices=("cases", "traces"))
    p.add_argument("source", help="input file: .jsonl or .parquet")
    p.add_argument("target", help="output file: .jsonl or .parquet")


def _convert(args) -> int:
    from pathlib import Path

    from workbench.audit import parquet
    from workbench.audit.cases import dump_cases, load_cases
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import encode_trace, read_traces
    from workbench.cli import CliError

    if parquet.is_parquet(args.source) == parquet.is_parquet(args.target):
        raise CliError(
            f"convert {args.source} -> {args.target}: exactly one of the two must end in .parquet "
            "(the other is JSONL)"
        )
    try:
        if args.kind == "cases":
            cases = load_cases(args.source)  # reads both formats
            n = (parquet.write_cases(cases, args.target) if parquet.is_parquet(args.target)
                 else dump_cases(cases, args.target))
        else:
            if parquet.is_parquet(args.source):
                traces = parquet.read_traces(args.source)
            elif not Path(args.source).exists():
                raise FileNotFoundError(f"{args.source}: no such traces file")
            else:
                traces = latest_per_case(read_traces(args.source)[0], key=trace_key)
            if parquet.is_parquet(args.target):
                n = parquet.write_traces(traces, args.target)
            else:
                with open(args.target, "w", encoding="utf-8") as out:
                    out.writelines(encode_trace(t) + "\n" for t in traces)
                n = len(traces)
    except OSError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {n} {args.kind} to {args.target}")
    return 0
