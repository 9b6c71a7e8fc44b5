"""The verdict figures of a judged run with 95 % intervals, resampling whole conversations.

A few dozen judged cases is what this machine affords (about a minute a case), so every
figure is printed with the interval its sample size allows. Cases of one conversation share
a context and often a verdict: resampling cases one by one would understate the spread, so
the bootstrap draws conversations (the same grouping the threshold's cross-validation uses).

    python bench/verdict_intervals.py --traces run.jsonl --cases cases.jsonl [--boot 2000]

Prints n (cases, conversations, violations), then ACC and violation-F1 of the bare verdict,
AUROC of the probability, violation-F1 and ACC at the cross-validated threshold (grouped by
conversation, out of fold) and the accuracy of the 50 % most confident decisions (calibrated
out of fold), each as ``value [low, high]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import load_cases  # noqa: E402
from workbench.audit.trace import latest_per_case  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.decision import fit_verbal_setting, scored_traces  # noqa: E402
from workbench.vocabulary import label_violation  # noqa: E402


def figures(scored, bare) -> dict[str, float]:
    """The figures ``workbench calibrate`` reports (the same code: ``fit_verbal_setting``)."""
    truth = [s.violation for s in scored]
    cv = fit_verbal_setting(scored, bare=bare).cross_validated
    return {
        "ACC (bare verdict)": cv["bare_accuracy"],
        "violation-F1 (bare verdict)": cv["bare_f1"],
        "AUROC (probability)": cv["auroc"],
        "violation-F1 at CV threshold": cv["f1"],
        "ACC at CV threshold": cv["accuracy"],
        "ACC, most confident half": cv["accuracy_most_confident_half"],
    } if len(set(truth)) == 2 else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--cases", required=True, type=Path)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    truth = {c.id: label_violation(c.label) for c in load_cases(args.cases) if c.label}
    traces, problems = read_traces(args.traces)
    if problems:
        print(f"{len(problems)} unreadable trace line(s) skipped", file=sys.stderr)
    traces = latest_per_case(traces)
    scored, bare = scored_traces(traces, truth)
    # Cases of the sample with no judged verdict (a model error, no route, EmptySeed): the
    # figures below are over the judged ones, so say how many were not.
    judged = {s.case_id for s in scored}
    audited = {t.id for t in traces if t.id in truth}
    unjudged = sorted(audited - judged)
    if not scored:
        sys.exit(f"error: no labelled trace with a probability in {args.traces}")
    point = figures(scored, bare)

    by_group: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(scored):
        by_group[s.group].append(i)
    groups = list(by_group)
    rng = random.Random(args.seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.boot):
        idx = [i for g in rng.choices(groups, k=len(groups)) for i in by_group[g]]
        s = [scored[i] for i in idx]
        if len({x.violation for x in s}) < 2:
            continue  # AUROC and F1 need both classes
        # Resampled conversations repeat: give each copy its own group so the CV folds hold.
        s = [replace(x, group=f"{x.group}#{k}") for k, x in enumerate(s)]
        try:
            for name, value in figures(s, [bare[i] for i in idx]).items():
                draws[name].append(value)
        except ValueError:
            continue

    n_v = sum(s.violation for s in scored)
    print(f"n = {len(scored)} judged cases with a probability ({n_v} violations, "
          f"{len(scored) - n_v} compliant) from {len(groups)} conversations; "
          f"{args.boot} conversation bootstrap draws")
    print(f"{len(audited)} of the sample's {len(truth)} labelled cases audited; "
          f"{len(unjudged)} without a judged verdict: {' '.join(unjudged) or '-'}")
    out = {"cases": len(scored), "violations": n_v, "conversations": len(groups),
           "audited": len(audited), "unjudged": unjudged, "figures": {}}
    for name, value in point.items():
        d = sorted(draws[name])
        lo, hi = (d[int(0.025 * len(d))], d[int(0.975 * len(d)) - 1]) if d else (float("nan"),) * 2
        out["figures"][name] = {"value": value, "low": lo, "high": hi}
        print(f"{name:32s} {value:.3f}  [{lo:.3f}, {hi:.3f}]")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
