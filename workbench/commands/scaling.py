"""``workbench scaling``: fit judge-size/complexity scaling models, pick distillation data."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.commands._common import (
    CliError,
    action,
    audit_index_and_cases,
    command_group,
    load_cases_or_fail,
)
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
        default=None,
        metavar="B",
        help="reference judge size in billions for the gains G_b = P_b - P_ref: one of the "
        "sizes run (default: the smallest run)",
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
    _add_recovery(select)
    _add_maxiter(select)

    rec = action(
        sub, "recovery", run_recovery,
        help="Recovery (first paper, Eq. 6) of distilled judges from their evaluations",
        description="Read each judge's violation-F1 from its evaluation on the same held-out "
        "cases (a `workbench audit --out` traces file or a `workbench metrics --json` "
        "file) and print Recovery = (F1(distilled) - F1(base)) / (F1(teacher) - F1(base)). "
        "--f1-* values stand in for judges evaluated elsewhere.",
    )
    _add_recovery(rec)
    rec.add_argument("--json", action="store_true", help="print the rows as JSON")


RECOVERY_JUDGES = {
    "base": "the student before distillation",
    "teacher": "the teacher judge",
    "uniform": "the student trained on uniform.jsonl",
    "headroom": "the student trained on headroom.jsonl",
}


def _add_recovery(parser: argparse.ArgumentParser) -> None:
    recovery = parser.add_argument_group(
        "recovery (first paper, Eq. 6)",
        "F1 before and after distillation on the same held-out cases: for each judge, its "
        "evaluation (--JUDGE-run: the traces of `workbench audit --out`, or the output of "
        "`workbench metrics --json`; runs that scored different cases are refused) or "
        "an F1 measured elsewhere (--f1-JUDGE). With base, teacher and at least one distilled "
        "judge, the output adds each Recovery = (F1(distilled) - F1(base)) / (F1(teacher) - "
        "F1(base))",
    )
    for name, what in RECOVERY_JUDGES.items():
        recovery.add_argument(f"--{name}-run", metavar="FILE", help=f"evaluation of {what}")
        recovery.add_argument(f"--f1-{name}", type=float, metavar="F1", help=f"F1 of {what}, typed in")
    recovery.add_argument("--runs-cases", metavar="CASES.jsonl",
                          help="the held-out cases: only their traces count, with these labels "
                          "(default: every trace, with the labels it carries)")
    recovery.add_argument("--runs-strategy", metavar="STRATEGY",
                          help="the strategy row to read when an evaluation holds several")
    recovery.add_argument("--bootstrap", type=int, default=0, metavar="N",
                          help="add 95%% conversation-bootstrap intervals of each F1 and "
                          "Recovery from N draws (needs every judge's traces, not metrics "
                          "JSON or typed-in F1; 2000 is plenty)")


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
    sizes = sorted(float(s) for s in outcomes["params_b"].unique())
    if args.reference is not None and args.reference not in sizes:
        raise CliError(f"no judge of {args.reference:g}B was run, so there is no gain to take "
                       "against it", f"choose --reference from the sizes run: "
                       f"{', '.join(f'{s:g}' for s in sizes)}")
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
        if report.fallback:
            print(f"\nReported: {report.selected} (complexity not identifiable; see the note)")
        else:
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
        _print_recovery(recovery)
    return 0


def _recovery(args: argparse.Namespace) -> list[dict]:
    """Recovery rows from the --JUDGE-run evaluations and --f1-JUDGE values, [] when no
    distilled judge is given."""
    from workbench.scaling.recovery_runs import recovery_from_runs, run_f1, typed_f1

    given = {}
    for name in RECOVERY_JUDGES:
        path, typed = getattr(args, f"{name}_run"), getattr(args, f"f1_{name}")
        if path and typed is not None:
            raise CliError(f"give --{name}-run or --f1-{name}, not both")
        if path or typed is not None:
            given[name] = (path, typed)
    distilled = [n for n in ("uniform", "headroom") if n in given]
    if not distilled:
        if given:
            raise CliError("recovery needs a distilled model's F1: add --uniform-run / --headroom-run "
                           "(or --f1-uniform / --f1-headroom)")
        return []
    missing = [n for n in ("base", "teacher") if n not in given]
    if missing:
        raise CliError("recovery needs " + " and ".join(f"--{n}-run or --f1-{n} ({RECOVERY_JUDGES[n]})"
                                                       for n in missing))
    for name, (_path, typed) in given.items():
        if typed is not None and not 0 <= typed <= 1:
            raise CliError(f"F1 of {name} must be a number in [0, 1], got {typed!r}")
    labels = None
    if args.runs_cases:
        labels = {c.id: c.label for c in load_cases_or_fail(args.runs_cases)}

    def judge(name: str):
        path, typed = given[name]
        if path:
            return run_f1(path, name, labels=labels, group=args.runs_strategy)
        return typed_f1(name, typed)

    runs = {name: judge(name) for name in given}
    rows = recovery_from_runs(runs["base"], runs["teacher"], [runs[n] for n in distilled])
    rows = [{**row, "base_f1": runs["base"].f1, "teacher_f1": runs["teacher"].f1} for row in rows]
    if args.bootstrap:  # both `scaling recovery` and `scaling select` take --bootstrap
        intervals = _recovery_intervals(runs, args.bootstrap)
        rows = [{**row, "recovery_ci": intervals["recovery"][row["model"]],
                 "f1_ci": intervals["f1"][row["model"]], "bootstrap": intervals} for row in rows]
    return rows


def _recovery_intervals(runs: dict, draws: int) -> dict:
    from workbench.scaling.recovery_bootstrap import recovery_intervals

    if draws < 0:
        raise CliError(f"--bootstrap must be 0 (none) or a number of draws, got {draws}")
    without = [name for name, run in runs.items() if run.verdicts is None]
    if without:
        raise CliError("--bootstrap resamples each case's verdict, which only traces hold: give "
                       "`workbench audit --out` traces for " + ", ".join(without)
                       + " (not a metrics JSON or a typed-in F1), or drop --bootstrap")
    return recovery_intervals({name: list(run.verdicts) for name, run in runs.items()},
                              draws=draws)


def _print_recovery(rows: list[dict]) -> None:
    first = rows[0]
    print(f"recovery (F1 base {first['base_f1']:g}, teacher {first['teacher_f1']:g}):")
    for row in rows:
        where = f"  ({row['labelled']} cases, {row['source']})" if row["source"] != "typed in" else ""
        beside = "".join(f"  {label} {row[key]:.3f}" for key, label in (("acc", "ACC"), ("auroc", "AUROC"))
                         if row.get(key) is not None)
        ci = row.get("recovery_ci")
        spread = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        print(f"  {row['model']:<9} F1 {row['f1']:.3f}  recovery {row['recovery']:.3f}{spread}"
              f"{beside}{where}")
        if row.get("caution"):
            print(f"    caution: {row['caution']}")
    boot = first.get("bootstrap")
    if boot:
        gap = boot["headroom_minus_uniform_f1"]
        between = f"; F1 headroom - uniform [{gap[0]:.2f}, {gap[1]:.2f}]" if gap else ""
        print(f"  95% intervals: {boot['draws']} conversation-bootstrap draws over "
              f"{boot['conversations']} conversations ({boot['skipped']} skipped where the teacher's "
              f"F1 equals the base's){between}")


def run_recovery(args: argparse.Namespace) -> int:
    rows = _recovery(args)
    if not rows:
        raise CliError("nothing to compare: give the base, teacher and at least one distilled "
                       "judge (--base-run, --teacher-run, --uniform-run / --headroom-run)")
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        _print_recovery(rows)
    return 0
