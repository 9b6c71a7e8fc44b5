"""``workbench convert``: cases or traces between JSONL and Parquet, for bulk work."""

from __future__ import annotations

import argparse

from workbench.commands._case_formats import add_case_format_args
from workbench.commands._common import action


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "convert", _convert,
        help="cases or traces between JSONL and Parquet (by file extension)",
        description="Convert audit cases or traces between JSONL and Parquet (.parquet). "
        "Traces from JSONL keep the newest trace per case, as a resumed run means them. "
        "Cases in another format (--format openai|tau2|otel|map) are converted into the case "
        "schema, JSONL or Parquet.",
    )
    p.add_argument("kind", choices=("cases", "traces"))
    p.add_argument("source", help="input file: .jsonl or .parquet (cases: or --format's file)")
    p.add_argument("target", help="output file: .jsonl or .parquet")
    p.add_argument("--threshold", default=None, metavar="P|dataset:NAME|policy:NAME",
                   help="traces to Parquet: also write the decision this threshold makes of each "
                   "verdict's probability (a number, or a saved setting)")
    add_case_format_args(p)


def _convert(args) -> int:
    from pathlib import Path

    from workbench.audit import parquet
    from workbench.audit.cases import dump_cases, load_cases
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import encode_trace, read_traces
    from workbench.commands._case_formats import import_options, read_cases_arg
    from workbench.commands._common import CliError

    foreign = args.kind == "cases" and import_options(args).format != "cases"
    if args.kind == "traces" and (args.cases_format or args.cases_map or args.cases_policy):
        raise CliError("--format, --map and --policy are for cases, not traces")
    if not foreign and parquet.is_parquet(args.source) == parquet.is_parquet(args.target):
        raise CliError(
            f"convert {args.source} -> {args.target}: exactly one of the two must end in .parquet "
            "(the other is JSONL)"
        )
    try:
        if args.kind == "cases":
            # The case schema in either form, or an imported format (to the case schema).
            cases = read_cases_arg(args, args.source) if foreign else load_cases(args.source)
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
                n = parquet.write_traces(traces, args.target, _setting(args, traces))
            else:
                with open(args.target, "w", encoding="utf-8") as out:
                    out.writelines(encode_trace(t) + "\n" for t in traces)
                n = len(traces)
    except OSError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {n} {args.kind} to {args.target}")
    return 0


def _setting(args, traces):
    """``--threshold`` as the setting each row's decided record is read under; a saved
    activation setting brings its scorer's outputs for the features captured beside a JSONL
    source (none beside it: those cases are read under the default, as every page reads a
    case without activation scores)."""
    from dataclasses import replace
    from pathlib import Path

    from workbench.commands._common import activation_scores_beside, threshold_arg
    from workbench.decision.features import features_dir

    setting = threshold_arg(args.threshold)
    if getattr(setting, "scorer", None) is None or not features_dir(Path(args.source)).is_dir():
        return setting
    scores = activation_scores_beside(setting, [args.source], traces) or {}
    return replace(setting, case_scores={(t.id, t.strategy): scores[t.id]
                                         for t in traces if t.id in scores})
