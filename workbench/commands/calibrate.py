"""``workbench calibrate``: a calibration and a decision threshold from labelled verdicts,
saved as a versioned setting of a dataset or policy."""

from __future__ import annotations

import argparse
import json
import math
import sys

from workbench.commands._common import action


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "calibrate", _calibrate,
        help="calibrate violation probabilities and choose a decision threshold from labelled cases",
        description="Reads judged traces with a violation probability and the right answers "
        "(case labels, or reviewers' confirmed/overturned verdicts in the store), reports "
        "AUROC, violation-F1 of the bare verdict and at a threshold chosen by cross-validation "
        "grouped by conversation, and the accuracy of the most confident decisions; --save "
        "stores the threshold (fitted on all the cases) as the next version of a dataset's or "
        "policy's setting, which `workbench metrics --threshold`, Review and exports use.",
    )
    p.add_argument("traces", nargs="*", help="traces JSONL/Parquet from `workbench audit`")
    p.add_argument("--cases", default=None, help="cases with labels for the traces files")
    p.add_argument("--store", metavar="DATASET", default=None,
                   help="read traces, case labels and review decisions of DATASET from the database")
    p.add_argument("--run", action="append", default=None, help="with --store: only these runs")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    p.add_argument("--save", metavar="dataset:NAME|policy:NAME", default=None,
                   help="save the threshold as the next version of this setting")
    p.add_argument("--base-version", type=int, default=None,
                   help="with --save: the version you are replacing (default: the current one)")
    p.add_argument("--note", default="", help="with --save: why this threshold")
    p.add_argument("--json", default=None, metavar="OUT",
                   help="write the figures, reliability, threshold and risk-coverage curves as JSON")


def saved_threshold(scope: str):
    """The current saved ThresholdSetting of ``scope`` (``dataset:NAME`` / ``policy:NAME``)."""
    from store.db import make_engine
    from store.thresholds import current_threshold
    from workbench.commands._common import CliError

    kind, _, name = scope.partition(":")
    if kind not in ("dataset", "policy") or not name:
        raise CliError(f"{scope!r} is not a threshold scope",
                       "give a number from 0 to 1, dataset:NAME or policy:NAME")
    found = current_threshold(make_engine(), scope)
    if found is None:
        raise CliError(f"no threshold is saved for {scope}",
                       f"choose one with `workbench calibrate ... --save {scope}`")
    return found[1]


def _labelled(args):
    """(traces, truth by case id) from files or the store."""
    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import read_traces
    from workbench.commands._common import CliError
    from workbench.vocabulary import label_violation

    if args.store:
        from store.db import make_engine
        from store.labelled import labelled_traces

        return labelled_traces(make_engine(), args.store, args.run)
    if not args.traces:
        raise CliError("give traces files (with --cases) or --store DATASET")
    traces = []
    for path in args.traces:
        found, problems = read_traces(path)
        for problem in problems[:5]:
            print(f"warning: skipped {problem}", file=sys.stderr)
        traces += latest_per_case(found, key=trace_key)
    truth = {}
    if args.cases:
        from workbench.audit.cases import load_cases

        try:
            cases = load_cases(args.cases)
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        truth = {c.id: v for c in cases if (v := label_violation(c.label)) is not None}
    else:
        truth = {t.id: v for t in traces if (v := label_violation(t.label)) is not None}
    return traces, truth


def _calibrate(args) -> int:
    from workbench.audit.calibration import ThresholdSetting, scored_traces
    from workbench.audit.calibration_figures import calibration_report
    from workbench.commands._common import CliError

    traces, truth = _labelled(args)
    scored, bare = scored_traces(traces, truth)
    if len(scored) < 10 or len({s.violation for s in scored}) < 2:
        raise CliError(
            f"only {len(scored)} labelled verdicts with a probability "
            f"({sum(s.violation for s in scored)} violations) in {len(traces)} traces",
            "calibrating needs at least 10, with both answers: judge more labelled cases "
            "(`workbench audit` writes probabilities by default) or add labels")
    modes = sorted({t.judge_mode for t in traces if t.id in truth})
    strategies = sorted({t.strategy for t in traces if t.id in truth})
    report = calibration_report(scored, bare, args.folds, judge_mode=",".join(modes),
                                strategy=",".join(strategies))
    setting = ThresholdSetting.from_dict(report["setting"])
    cv = setting.cross_validated
    rows = [
        ("labelled verdicts with a probability", f"{len(scored)} ({sum(s.violation for s in scored)} "
         f"violations, {setting.fitted_on['groups']} conversations)"),
        ("AUROC of the probability", _f(cv["auroc"])),
        ("violation-F1, bare verdict", _f(cv.get("bare_f1", math.nan))),
        (f"violation-F1 at the threshold ({cv['folds']}-fold, grouped by conversation)", _f(cv["f1"])),
        ("ACC at the threshold (same folds)", _f(cv["accuracy"])),
        ("ACC of the 50 % most confident decisions", _f(cv["accuracy_most_confident_half"])),
        ("threshold fitted on all cases (for new ones)", f"{setting.threshold:.3f}"),
        ("calibration", "Platt a={a:.3f} b={b:.3f}".format(**setting.calibration)
         if setting.calibration else "none (too few cases of one answer)"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(_finite(report), f, indent=1)
    if args.save:
        _save(args, setting)
    return 0


def _save(args, setting) -> None:
    from store.db import make_engine
    from store.thresholds import current_threshold, save_threshold

    engine = make_engine()
    kind, _, name = args.save.partition(":")
    if kind not in ("dataset", "policy") or not name:
        from workbench.commands._common import CliError

        raise CliError(f"--save {args.save!r} is not dataset:NAME or policy:NAME")
    base = args.base_version
    if base is None:
        found = current_threshold(engine, args.save)
        base = found[0] if found else None
    version = save_threshold(engine, args.save, setting, base_version=base, note=args.note)
    print(f"saved threshold {setting.threshold:.3f} as version {version} of {args.save}")


def _f(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _finite(value):
    """``value`` with NaN as null: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
