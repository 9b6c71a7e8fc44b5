"""Compare judging modes on one sample and choose the default by leave-one-intent-out.

Reads one traces file per mode (``workbench audit --judge-mode M --out M.jsonl`` on the same
cases) and prints, per mode: violation-F1 and ACC of the bare verdict, AUROC of the
probability, tokens and model seconds per case, failures. Then the choice the issue asks
for: for each intent (the SKILL's workflow family, e.g. ``airlines-book-new-flight-itinerary``),
the mode with the best violation-F1 on the *other* intents is scored on the held-out one; the
mode chosen most often is the default, and the held-out F1 of the chosen modes is pooled.

Run: ``python bench/judge_modes.py --cases sample.jsonl whole=w.jsonl per-rule=p.jsonl
checklist=c.jsonl [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import load_cases  # noqa: E402
from workbench.audit.trace import latest_per_case, trace_key  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.decision import Scored, auroc, counts  # noqa: E402
from workbench.vocabulary import label_violation  # noqa: E402


def intent_of(case) -> str:
    skill = (case.skills or ["?"])[0]
    return skill.rsplit("-w", 1)[0]


def mode_rows(traces, cases_by_id, ids):
    """Bare-verdict counts and probability scores over ``ids`` (a missing verdict counts as
    'compliant' for F1, as ``workbench metrics`` counts it wrong for ACC)."""
    by_id = {t.id: t for t in traces}
    decided, truth, scored = [], [], []
    for cid in ids:
        t, case = by_id.get(cid), cases_by_id[cid]
        actual = label_violation(case.label)
        if actual is None:
            continue
        v = t.verdict if t is not None else None
        decided.append(bool(v and v.violation))
        truth.append(actual)
        if v is not None and v.probability is not None:
            scored.append(Scored(v.probability, actual, case.session, cid))
    return counts(decided, truth), scored


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", required=True)
    ap.add_argument("runs", nargs="+", help="MODE=traces.jsonl")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    cases = {c.id: c for c in load_cases(args.cases)}
    runs = {}
    for spec in args.runs:
        mode, _, path = spec.partition("=")
        found, _problems = read_traces(path)
        runs[mode] = latest_per_case(found, key=trace_key)
    common = sorted(set.intersection(*({t.id for t in ts if t.id in cases} for ts in runs.values())))
    print(f"{len(common)} cases judged in every mode "
          f"({sum(label_violation(cases[c].label) for c in common)} violations)")
    summary = {}
    for mode, traces in runs.items():
        mine = [t for t in traces if t.id in common]
        c, scored = mode_rows(mine, cases, common)
        calls = [u for t in mine for u in t.usage if u.role == "judge"]
        summary[mode] = {
            "cases": len(mine), "f1": c.f1, "acc": c.accuracy, "precision": c.precision,
            "recall": c.recall, "with_probability": len(scored),
            "auroc": auroc([s.probability for s in scored], [s.violation for s in scored]),
            "prompt_tokens_per_case": sum(u.prompt_tokens for u in calls) / len(mine),
            "completion_tokens_per_case": sum(u.completion_tokens for u in calls) / len(mine),
            "model_s_per_case": sum(u.latency_ms for u in calls if not u.cached) / 1000 / len(mine),
            "judge_calls_per_case": len(calls) / len(mine),
            "failures": sum(t.error is not None for t in mine),
            "evidence_refused": sum(t.verdict.evidence_refused for t in mine if t.verdict),
        }
    header = ["mode", "F1", "ACC", "AUROC", "prompt tok", "gen tok", "model s", "calls", "failed"]
    print("  ".join(h.rjust(10) for h in header))
    for mode, s in summary.items():
        print("  ".join(x.rjust(10) for x in [
            mode, f"{s['f1']:.3f}", f"{s['acc']:.3f}", f"{s['auroc']:.3f}",
            f"{s['prompt_tokens_per_case']:.0f}", f"{s['completion_tokens_per_case']:.0f}",
            f"{s['model_s_per_case']:.0f}", f"{s['judge_calls_per_case']:.1f}", str(s["failures"])]))
    intents = sorted({intent_of(cases[c]) for c in common})
    chosen, held_decided, held_truth = [], [], []
    for held in intents:
        train = [c for c in common if intent_of(cases[c]) != held]
        test = [c for c in common if intent_of(cases[c]) == held]
        best = max(runs, key=lambda m: (mode_rows(runs[m], cases, train)[0].f1, -list(runs).index(m)))
        chosen.append(best)
        by_id = {t.id: t for t in runs[best]}
        for cid in test:
            v = by_id[cid].verdict if cid in by_id else None
            held_decided.append(bool(v and v.violation))
            held_truth.append(bool(label_violation(cases[cid].label)))
    wins = Counter(chosen)
    pooled = counts(held_decided, held_truth)
    print(f"leave-one-intent-out over {len(intents)} intents: chosen {dict(wins)}; "
          f"pooled held-out violation-F1 {pooled.f1:.3f}, ACC {pooled.accuracy:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "cases": common, "modes": summary, "intents": intents,
            "leave_one_intent_out": {"chosen": chosen, "wins": dict(wins), "held_out_f1": pooled.f1,
                                     "held_out_acc": pooled.accuracy},
        }, indent=1, default=lambda x: None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
