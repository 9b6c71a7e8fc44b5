"""``workbench evaluate``: how well each policy-access strategy finds the governing rules.

- ``retrieval``: the recall–tokens curve: gold coverage of cdg, no-closure, bm25, dense and
  raw at matched context budgets (shares of RawSkill tokens);
- ``length-sweep``: the same CompliBench cases against SKILLs grown to controlled lengths.

Both print a table and write JSON (and, with ``--figure``, a standalone plotly HTML file);
the Studies page (the research lab) draws the JSON files found in ``WORKBENCH_EVAL_DIR`` (default
``.workbench/evaluations``), which is where ``--out`` writes by default.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from workbench.commands._common import (
    CliError,
    action,
    add_index_and_cases,
    audit_index_and_cases,
    command_group,
)
from workbench.settings import evaluations_dir


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"{what} must be comma-separated numbers, e.g. 0.05,0.1; got {text!r}") from None


def _names(text: str) -> list[str]:
    from workbench.audit.strategies import STRATEGIES

    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in STRATEGIES]
    if bad or not names:
        raise CliError(f"unknown strategy {', '.join(bad) or '(none)'}; choose from "
                       f"{', '.join(STRATEGIES)}")
    return names


def register(subparsers: Any) -> None:
    sub = command_group(
        subparsers, "evaluate", help="gold coverage of the policy-access strategies (length sweep: "
        "also judged accuracy)",
        description="Measure how often each strategy puts the gold governing rules in context.",
        dest="evaluate_command")

    r = action(sub, "retrieval", _retrieval, help="recall–tokens curve at matched context budgets",
               description="Gold coverage per strategy at context budgets given as "
               "shares of the routed SKILLs' RawSkill tokens.")
    add_index_and_cases(r, cases_help="cases JSONL with gold governing rules")
    r.add_argument("--budgets", default="0.05,0.1,0.15,0.2,0.3",
                   help="shares of RawSkill tokens (default 0.05,0.1,0.15,0.2,0.3)")
    r.add_argument("--strategies", default="cdg,no-closure,bm25,dense,raw")
    r.add_argument("--limit", type=int, default=None, help="only the first N cases")
    r.add_argument("--name", default=None, help="dataset name in the output (default: cases file)")
    r.add_argument("--out", default=None, help="JSON result (default: WORKBENCH_EVAL_DIR)")
    r.add_argument("--figure", default=None, help="also write the plotly figure as HTML here")

    s = action(sub, "length-sweep", _length_sweep, help="coverage and tokens as the SKILLs grow",
               description="Rebuild each CompliBench case's SKILL at controlled lengths "
               "by adding inapplicable clauses (other intents' workflows, then other "
               "domains' policies from --foreign) and measure every strategy.")
    s.add_argument("dir", help="folder with CompliBench conversation_*.json files")
    s.add_argument("--lengths", default="4000,8000,12000,20000,28000,36000",
                   help="SKILL lengths in tokens (default: six from 4K to 36K)")
    s.add_argument("--foreign", nargs="*", default=[],
                   help="other domains' policies used as inapplicable clauses: Markdown files, "
                   "JSON documents with title and content, or folders of them")
    s.add_argument("--strategies", default="cdg,no-closure,bm25,dense,raw")
    s.add_argument("--limit", type=int, default=None, help="only the first N cases")
    s.add_argument("--judge", action="store_true",
                   help="also judge a sample of the cases at every length and strategy and "
                   "report ACC and violation-F1 (uses the judge role; see --sample)")
    s.add_argument("--sample", type=int, default=20,
                   help="with --judge: cases judged per length and strategy, violations and "
                   "compliant replies alternately, the same cases everywhere (default 20)")
    s.add_argument("--concurrency", type=int, default=1,
                   help="with --judge: cases judged at once (default 1)")
    s.add_argument("--no-cache", action="store_true",
                   help="with --judge: do not use the database response cache")
    s.add_argument("--out", default=None, help="JSON result (default: WORKBENCH_EVAL_DIR)")
    s.add_argument("--figure", default=None,
                   help="also write the figure as HTML here (accuracy with --judge, else "
                   "coverage)")


def _write(result: dict[str, Any], args, default_name: str, figure: Any) -> int:
    """Write ``result`` to ``--out`` (default: the evaluations folder) and, with ``--figure``,
    ``figure(result)`` as standalone HTML; the command's exit status."""
    path = Path(args.out) if args.out else evaluations_dir() / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    if args.figure:
        figure(result).write_html(args.figure, include_plotlyjs=True)
    return 0


def _progress(*parts: Any) -> None:
    print("[evaluate] " + " ".join(str(p) for p in parts), file=sys.stderr, flush=True)


def _retrieval(args) -> int:
    from workbench.audit.dense import DenseUnavailable
    from workbench.evaluate.coverage_curve import coverage_curve, format_curve
    from workbench.evaluate.curve_figure import curve_figure

    shares = _floats(args.budgets, "--budgets")
    names = _names(args.strategies)
    index, cases = audit_index_and_cases(args)
    if args.limit is not None:
        cases = cases[: args.limit]
    dataset = args.name or Path(args.cases).parent.name or Path(args.cases).stem
    try:
        curve = coverage_curve(index, cases, shares, names, dataset=dataset,
                               progress=lambda n, s: _progress(n, f"{s:.0%}"))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except DenseUnavailable as exc:
        raise CliError(f"{exc}; or leave dense out with --strategies") from None
    if not curve.points or not curve.points[0].cases:
        raise CliError(f"{args.cases}: no case has gold governing rules (gold.governing_rule); "
                       "coverage needs them (see `workbench import-complibench`)")
    print(format_curve(curve))
    result = {"kind": "retrieval", **curve.as_dict()}
    return _write(result, args, f"retrieval-{dataset}.json", curve_figure)


def _length_sweep(args) -> int:
    from dataclasses import asdict
    from functools import partial

    from workbench.audit.dense import DenseUnavailable
    from workbench.commands._common import cli_gateway
    from workbench.errors import WorkbenchError
    from workbench.evaluate.curve_figure import sweep_figure
    from workbench.evaluate.length_sweep import format_sweep, run_sweep, sweep_levels

    lengths = [int(x) for x in _floats(args.lengths, "--lengths")]
    if any(n < 500 for n in lengths):
        raise CliError(f"--lengths are SKILL sizes in tokens (e.g. 4000); got {lengths}")
    foreign = [Path(f) for f in args.foreign]
    missing = [str(f) for f in foreign if not f.exists()]
    if missing:
        raise CliError(f"--foreign: no such file(s): {', '.join(missing)}")
    names = _names(args.strategies)
    if args.judge and args.sample < 1:
        raise CliError(f"--sample is the number of cases judged (at least 1); got {args.sample}")
    try:
        levels, cases = sweep_levels(args.dir, tuple(lengths), foreign)
    except WorkbenchError:  # LengthSweepError: names the missing foreign text and the fix
        raise
    except (FileNotFoundError, ValueError) as exc:  # CompliBenchFormatError is a ValueError
        raise CliError(str(exc)) from None
    if args.limit is not None:
        cases = cases[: args.limit]
    gateway = cli_gateway(args.no_cache) if args.judge else None
    try:
        rows = run_sweep(levels, cases, tuple(names), progress=_progress, gateway=gateway,
                         judge_sample_size=args.sample if args.judge else 0,
                         concurrency=args.concurrency)
    except DenseUnavailable as exc:
        raise CliError(f"{exc}; or leave dense out with --strategies") from None
    finally:
        if gateway is not None:
            gateway.close()
    print(format_sweep(rows))
    result = {"kind": "length-sweep", "dataset": Path(args.dir).name,
              "foreign": [f.name for f in foreign], "judged": bool(args.judge),
              "rows": [asdict(r) for r in rows]}
    figure = partial(sweep_figure, metric="acc") if args.judge else sweep_figure
    name = f"length-sweep-{Path(args.dir).name}{'-judged' if args.judge else ''}.json"
    return _write(result, args, name, figure)
