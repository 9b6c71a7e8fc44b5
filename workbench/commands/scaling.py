"""``workbench scaling``: fit judge-size/complexity scaling models, pick distillation data."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.cli import CliError
from workbench.commands._common import action, command_group
from workbench.vocabulary import StrategyName


def register(subparsers: Any) -> None:
    sub = command_group(
        subparsers, "scaling",
        help="scaling analysis of judge correctness vs judge size and policy complexity",
        description="Fit how judge correctness depends on judge size and rule-graph "
        "complexity, and choose distillation samples from the fit.",
        dest="scaling_command",
    )

    fit = action(
        sub, "fit", run_fit,
        help="fit the models, select one by grouped CV, bootstrap intervals, LOSO",
        description="Fit the full, nested and additive models to an outcomes table "
        "(CSV or JSONL with instance, dataset, session, params_b, complexity, correct). "
        "With a single judge size, fit the size-free intercept and complexity models instead.",
    )
    fit.add_argument("outcomes", metavar="OUTCOMES", help="outcomes table (.csv or .jsonl)")
    fit.add_argument("--json", action="store_true", help="print the results as JSON")
    fit.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="session-bootstrap replicates for the intervals (default 1000; 0 skips)",
    )
    fit.add_argument(
        "--refit",
        choices=("full", "local"),
        default=None,
        help="how each bootstrap replicate is refitted: local (from the full-data estimate; "
        "default) or full (global search + local, the paper's; same measured coverage, about "
        "20x slower)",
    )
    fit.add_argument("--seed", type=int, default=2027, help="bootstrap/CV seed (default 2027)")
    fit.add_argument(
        "--reference",
        type=float,
        default=2.0,
        metavar="B",
        help="reference judge size in billions for the gains (default 2)",
    )
    fit.add_argument("--no-loso", action="store_true", help="skip leave-one-scale-out")
    _add_maxiter(fit)

    select = action(
        sub, "select", run_select,
        help="select distillation samples by teacher-student headroom",
        description="Write two same-size training sets with identical (dataset, label) "
        "quotas: uniform within strata and highest-headroom within strata.",
    )
    select.add_argument("outcomes", metavar="OUTCOMES", help="outcomes table (.csv or .jsonl)")
    select.add_argument(
        "--teacher", type=float, required=True, metavar="B", help="teacher judge size in billions"
    )
    select.add_argument(
        "--student", type=float, required=True, metavar="B", help="student judge size in billions"
    )
    select.add_argument("--n", type=int, required=True, help="samples per training set")
    select.add_argument("--out", required=True, metavar="DIR", help="output directory")
    select.add_argument(
        "--cases",
        metavar="JSONL",
        help="cases with 'instance' and a 'prompt' (or fields to build one) and target "
        "fields such as 'violation'; without it the sets carry no prompts",
    )
    select.add_argument(
        "--index",
        metavar="JSON",
        help="policy index: read --cases as audit cases and materialise each one's exact "
        "judge prompt (workbench train data records) into the sets",
    )
    select.add_argument(
        "--strategy", default=StrategyName.CDG, help="strategy of the materialised judge prompt (cdg)"
    )
    select.add_argument(
        "--model",
        choices=("auto", "additive", "nested", "full"),
        default="auto",
        help="model giving the headroom (default: the one chosen by grouped CV)",
    )
    select.add_argument("--seed", type=int, default=17, help="uniform selection seed (17)")
    recovery = select.add_argument_group(
        "recovery (Eq. 6)",
        "F1 measured before and after distillation on the same cases; with --f1-base, "
        "--f1-teacher and at least one distilled F1, the output adds each set's Recovery "
        "= (F1(distilled) - F1(base)) / (F1(teacher) - F1(base))",
    )
    recovery.add_argument("--f1-base", type=float, metavar="F1", help="the student before distillation")
    recovery.add_argument("--f1-teacher", type=float, metavar="F1", help="the teacher judge")
    recovery.add_argument("--f1-uniform", type=float, metavar="F1", help="student trained on uniform.jsonl")
    recovery.add_argument("--f1-headroom", type=float, metavar="F1", help="student trained on headroom.jsonl")
    _add_maxiter(select)


def _add_maxiter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--maxiter",
        type=int,
        default=300,
        metavar="N",
        help="differential-evolution generations per fit (default 300; lower is faster)",
    )


def _fit_options(args: argparse.Namespace):
    from workbench.scaling import FitOptions

    if args.maxiter < 1:
        raise CliError("--maxiter must be at least 1")
    return FitOptions(maxiter=args.maxiter)


def _progress(message: str) -> None:
    print(f"… {message}", file=sys.stderr, flush=True)


def run_fit(args: argparse.Namespace) -> int:
    from workbench.scaling import DEFAULT_REFIT, AnalysisOptions, FitError, analyse_scaling, load_outcomes

    if args.bootstrap < 0:
        raise CliError("--bootstrap must be 0 or more replicates")
    outcomes = load_outcomes(args.outcomes)
    options = AnalysisOptions(
        bootstrap=args.bootstrap,
        seed=args.seed,
        reference_b=args.reference,
        loso=not args.no_loso,
        fit=_fit_options(args),
        refit=args.refit or DEFAULT_REFIT,
    )
    try:
        report = analyse_scaling(outcomes, options, progress=None if args.json else _progress)
    except (FitError, ValueError) as exc:
        raise CliError(f"{exc}") from None
    if args.json:
        print(json.dumps(report.to_json(), indent=2, allow_nan=False))
        return 0
    _print_report(report)
    return 0


def _print_report(report: Any) -> None:
    import pandas as pd

    with pd.option_context("display.width", 120, "display.max_columns", 20):
        for note in report.notes:
            print(f"note: {note}\n")
        print("Model comparison (session-grouped 5-fold CV, log loss):")
        print(report.comparison_table().to_string(index=False, float_format="%.4f"))
        print(f"\nSelected by the one-SE rule: {report.selected}")
        print(f"\nParameters of {report.selected} (95% session-bootstrap intervals):")
        table = report.intervals_table(report.selected)
        print(table.to_string(index=False, float_format="%.4f"))
        if report.loso:
            print("\nLeave-one-scale-out:")
            print(pd.DataFrame(report.loso).to_string(index=False, float_format="%.4f"))
        elif not report.single_size:
            print("\nLeave-one-scale-out: skipped (needs at least three judge sizes)")


def _select_cases(args: argparse.Namespace) -> list[dict]:
    """The --cases rows: as given, or (with --index) audit cases materialised into training
    records carrying the exact judge prompt of --strategy."""
    from workbench.scaling import load_cases

    if not args.index:
        cases = load_cases(args.cases)
        if any("model_response" in c and "prompt" not in c for c in cases):
            raise CliError(
                f"{args.cases} holds audit cases without a materialised prompt; pass --index "
                "(the policy index they were audited with) to build each case's judge prompt"
            )
        return cases
    from workbench.commands.audit import audit_index_and_cases
    from workbench.train.data import materialise

    index, audit_cases = audit_index_and_cases(args, args.strategy)
    return [r.to_dict() for r in materialise(audit_cases, index, args.strategy)]


def run_select(args: argparse.Namespace) -> int:
    from workbench.scaling import (
        FitError,
        SelectionError,
        cross_validate,
        fit_model,
        load_outcomes,
        one_se_select,
        select_distillation,
        write_training_sets,
    )

    options = _fit_options(args)
    recovery = _recovery(args)  # checked before the (slow) fit
    outcomes = load_outcomes(args.outcomes)
    sizes = sorted(outcomes["params_b"].unique())
    if len(sizes) < 2:
        raise CliError(
            f"distillation selection compares a teacher and a student judge, but {args.outcomes} "
            f"holds outcomes of one judge size ({sizes[0]:g}B); add the other judge's outcomes "
            "(workbench scaling-outcomes with one trace file per judge)"
        )
    try:
        cases = _select_cases(args) if args.cases else None
        model = args.model
        if model == "auto":
            _progress("choosing the model by session-grouped cross-validation")
            model = one_se_select(cross_validate(outcomes, options=options))
        _progress(f"fitting the {model} model")
        fit = fit_model(outcomes, model, options)
        selection = select_distillation(
            outcomes, fit, args.teacher, args.student, args.n, cases=cases, seed=args.seed
        )
        paths = write_training_sets(selection, args.out, cases)
    except (SelectionError, FitError, ValueError) as exc:
        raise CliError(f"{exc}") from None
    except OSError as exc:
        raise CliError(
            f"could not write to {args.out}: {exc.strerror}; choose a writable --out directory"
        ) from None
    summary = selection.summary()
    print(f"model: {model}; {summary['n']} samples per set")
    print(
        f"mean headroom: uniform {summary['mean_headroom']['uniform']:.4f}, "
        f"headroom {summary['mean_headroom']['headroom']:.4f}"
    )
    for note in selection.notes + ([] if cases else ["no --cases: prompts are empty"]):
        print(f"note: {note}", file=sys.stderr)
    for name, path in paths.items():
        print(f"{name}: {path}")
    if recovery:
        print(f"recovery (F1 base {args.f1_base:g}, teacher {args.f1_teacher:g}):")
        for row in recovery:
            print(f"  {row['model']:<9} F1 {row['f1']:.3f}  recovery {row['recovery']:.3f}")
    return 0


def _recovery(args: argparse.Namespace) -> list[dict]:
    """Recovery rows from the --f1-* options, [] when no distilled F1 is given."""
    from workbench.scaling import recovery_rows

    distilled = {
        name: value
        for name, value in (("uniform", args.f1_uniform), ("headroom", args.f1_headroom))
        if value is not None
    }
    if not distilled:
        if args.f1_base is not None or args.f1_teacher is not None:
            raise CliError("recovery needs a distilled model's F1: add --f1-uniform and/or --f1-headroom")
        return []
    if args.f1_base is None or args.f1_teacher is None:
        raise CliError("recovery needs --f1-base (the student before distillation) and --f1-teacher")
    try:
        return recovery_rows(args.f1_base, args.f1_teacher, distilled)
    except ValueError as exc:
        raise CliError(str(exc)) from None
