"""``workbench calibrate``: a calibration and a decision threshold from labelled verdicts,
saved as a versioned setting of a dataset or policy."""

from __future__ import annotations

import argparse
import json
import math
import sys

from workbench.commands._common import action, add_actor_option


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
    p.add_argument("--score", choices=("auto", "verbal", "activations"), default="auto",
                   help="what the decision reads: the judge's activations (a scorer learned from "
                   "these labels; needs `workbench features capture` beside each traces file), "
                   "its verbal probability, or auto: activations where captured for every "
                   "traces file, else verbal")
    p.add_argument("--alpha", type=float, default=None, metavar="A",
                   help="decide automatically only where the error rate is at most A (e.g. 0.05) "
                   "with 95%% confidence; the rest goes to review")
    p.add_argument("--guarantee", choices=("levels", "split"), default="levels",
                   help="with --alpha: test ten confidence levels at once (levels, default), or "
                   "choose the level on half the conversations and certify it on the other half "
                   "(split): the same promise, from fewer labels (29 auto-decided cases at "
                   "--alpha 0.1 instead of 51)")
    p.add_argument("--miss-cost", type=float, default=1.0,
                   help="cost of a missed violation against --false-alarm-cost (default 1:1)")
    p.add_argument("--false-alarm-cost", type=float, default=1.0)
    p.add_argument("--from-scratch", action="store_true",
                   help="with activations: fit a scorer from these labels alone instead of "
                   "starting from the built-in scorer (which is replaced only where the labels "
                   "show, out of fold, that an adapted one ranks them better)")
    p.add_argument("--from-setting", metavar="FILE", default=None,
                   help="with --save: save the setting of a `calibrate --json` file (fitted "
                   "elsewhere, e.g. a scorer learned on another policy) instead of fitting one")
    add_actor_option(p)


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
    from workbench.commands._common import CliError
    from workbench.decision import (
        DecisionSetting,
        add_verbal_guarantee,
        calibration_report,
        scored_traces,
    )
    from workbench.inputs import nulls_for_nan

    if args.alpha is not None and not 0 < args.alpha < 0.5:
        raise CliError(f"--alpha {args.alpha}: give the error rate you accept, between 0 and 0.5")
    if args.from_setting:
        return _save_given(args)
    traces, truth = _labelled(args)
    if _use_activations(args):
        setting = _activation_setting(args, traces, truth)
        report = {"kind": "calibration", "setting": setting.to_dict()}
        _print_rows(setting, setting.fitted_on["cases"], setting.fitted_on["violations"])
    else:
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
                                    strategy=",".join(strategies), miss_cost=args.miss_cost,
                                    false_alarm_cost=args.false_alarm_cost)
        setting = DecisionSetting.from_dict(report["setting"])
        if args.alpha is not None:
            add_verbal_guarantee(setting, [s.probability for s in scored],
                                 [s.violation for s in scored], [s.group for s in scored],
                                 args.alpha, args.folds, method=args.guarantee)
            report["setting"] = setting.to_dict()
        _print_rows(setting, len(scored), sum(s.violation for s in scored))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(nulls_for_nan(report, infinities=False), f, indent=1)
    if args.save:
        _save(args, setting)
    return 0


def _save_given(args) -> int:
    """``--from-setting FILE --save SCOPE``: a setting fitted elsewhere, checked and saved."""
    from workbench.commands._common import CliError
    from workbench.decision import DecisionSetting
    from workbench.inputs import InputError, decode_text, loads_json, read_input_bytes

    if not args.save:
        raise CliError("--from-setting saves a setting: give --save dataset:NAME or policy:NAME")
    try:
        data = loads_json(decode_text(read_input_bytes(args.from_setting), args.from_setting)[0],
                          origin=args.from_setting)
        setting = DecisionSetting.from_dict(data.get("setting", data) if isinstance(data, dict) else {})
    except (InputError, OSError, ValueError) as exc:
        raise CliError(f"{args.from_setting}: not a decision setting ({exc})",
                       "give the JSON `workbench calibrate ... --json OUT` wrote") from None
    _print_rows(setting, int(setting.fitted_on.get("cases", 0)),
                int(setting.fitted_on.get("violations", 0)))
    _save(args, setting)
    return 0


def _use_activations(args) -> bool:
    from pathlib import Path

    from workbench.commands._common import CliError
    from workbench.decision.features import features_dir

    if args.score == "verbal":
        return False
    have = bool(args.traces) and all(features_dir(Path(p)).is_dir() for p in args.traces)
    if args.score == "activations" and not have:
        raise CliError("--score activations needs the judge's activations beside every traces "
                       "file (and not --store)",
                       "capture them with `workbench features capture TRACES --cases CASES`")
    return have


def _activation_setting(args, traces, truth):
    from pathlib import Path

    import numpy as np

    from workbench.commands._common import CliError
    from workbench.decision import fit_activation_setting
    from workbench.decision.features import features_dir, load_features, read_index
    from workbench.decision.learn import Labelled

    by_id = {t.id: t for t in traces}
    ids, arrays, layers, models = [], [], set(), set()
    for path in args.traces:
        folder = features_dir(Path(path))
        have = [r.case_id for r in read_index(folder) if r.case_id in truth and r.case_id in by_id]
        fs = load_features(folder, ids=have)
        ids += fs.ids
        arrays.append(fs.arrays)
        layers.add(fs.layers)
        models.add(fs.model)
    if len(layers) != 1 or len(models) != 1:
        raise CliError("the traces files' features come from different models or layers",
                       "calibrate each model's runs on their own")
    truth_arr = np.array([truth[c] for c in ids], dtype=bool)
    if len(ids) < 10 or truth_arr.all() or not truth_arr.any():
        raise CliError(f"only {len(ids)} labelled cases with captured activations "
                       f"({int(truth_arr.sum())} violations)",
                       "a scorer needs at least 10, with both answers: label or capture more")
    data = Labelled(ids, [by_id[c].session or c for c in ids], truth_arr,
                    [by_id[c].verdict.probability if by_id[c].verdict else None for c in ids],
                    np.concatenate(arrays), next(iter(layers)))
    from workbench.decision import builtin_layer, builtin_setting, fit_adapted_setting

    costs = {"alpha": args.alpha, "miss_cost": args.miss_cost, "guarantee": args.guarantee,
             "false_alarm_cost": args.false_alarm_cost, "model": next(iter(models))}
    try:
        if not args.from_scratch and builtin_layer() in data.layers:
            return fit_adapted_setting(data, builtin_setting(), folds=args.folds, **costs)
        return fit_activation_setting(data, folds=args.folds, **costs)
    except ValueError as exc:
        raise CliError(str(exc), "label more cases of the rarer answer") from None


def _print_rows(setting, n: int, violations: int) -> None:
    cv = setting.cross_validated
    activations = setting.scorer is not None
    rows = [
        ("labelled cases scored", f"{n} ({violations} violations, "
         f"{setting.fitted_on['groups']} conversations)"),
        ("score the decision reads", f"the judge's activations: {setting.fitted_on['scorer']}"
         if activations else "the judge's verbal probability"),
        (f"AUROC ({cv['folds']}-fold, grouped by conversation"
         f"{', scorer chosen inside each fold' if activations else ''})", _f(cv["auroc"])),
    ]
    if activations:
        rows.append(("AUROC of the judge's verbal probability, same cases",
                     _f(cv.get("verbal_auroc", math.nan))))
    else:
        rows.append(("violation-F1, bare verdict", _f(cv.get("bare_f1", math.nan))))
    rows += [
        ("violation-F1 of the decisions (same folds)", _f(cv["f1"])),
        ("ACC of the decisions (same folds)", _f(cv["accuracy"])),
        ("ACC of the 50 % most confident decisions", _f(cv["accuracy_most_confident_half"])),
        ("violation from a calibrated probability of", f"{setting.threshold:.3f} "
         f"(costs: miss {setting.costs['miss']:g}, false alarm {setting.costs['false_alarm']:g})"),
        ("calibration (monotone)", "a={a:.3f} b={b:.3f}".format(**setting.calibration)
         if setting.calibration else "none (too few cases of one answer)"),
    ]
    if not setting.ranks:
        rows.append(("warning", "this score does not rank cases here (AUROC below 0.55 or a "
                     "calibration that would run backwards): nothing is decided automatically"))
    if setting.auto:
        a = setting.auto
        how = (", level chosen on half the conversations, certified on the other"
               if a.get("method") == "split" else "")
        rows.append((f"auto-decide at error <= {a['alpha']:g} (95 %{how})",
                     "nothing: no confidence level passes on these labels" if a["level"] is None
                     else f"confidence >= {a['level']:.3f}: {a['coverage']:.0%} of cases, "
                     f"{a['errors']} of {a['decided']} wrong, bound {a['bound']:.3f}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}")


def _save(args, setting) -> None:
    from store.db import make_engine
    from store.thresholds import current_threshold, save_threshold
    from workbench.commands._common import cli_actor

    engine = make_engine()
    actor = cli_actor(args, engine)
    kind, _, name = args.save.partition(":")
    if kind not in ("dataset", "policy") or not name:
        from workbench.commands._common import CliError

        raise CliError(f"--save {args.save!r} is not dataset:NAME or policy:NAME")
    base = args.base_version
    if base is None:
        found = current_threshold(engine, args.save)
        base = found[0] if found else None
    version = save_threshold(engine, args.save, setting, base_version=base, actor=actor,
                             note=args.note)
    what = "activation scorer" if setting.scorer else "calibration"
    print(f"saved the {what} and decision as version {version} of {args.save}")


def _f(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"

