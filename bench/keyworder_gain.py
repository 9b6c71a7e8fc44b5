"""Gold coverage of the closure before and after a keyworder was trained, from two
``workbench audit`` trace files of the same cases (``--keywords llm --seeding keywords
--no-judge``: the closure then depends on the keywords alone, as in the GRPO reward).

Prints, per trace file: keyword calls that failed, mean share of each case's gold rules in
the closure (the coverage reward without its token term), share of cases with every gold rule
in context (``workbench evaluate``'s coverage), mean context tokens; then the paired changes.

Run: ``python bench/keyworder_gain.py --index cb/index.json --cases cases.jsonl
--before before.jsonl --after after.jsonl``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import AuditIndex, load_cases  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.evaluate.coverage_curve import covers  # noqa: E402
from workbench.graph import PolicyIndex  # noqa: E402


def gold_share(trace, case) -> float:
    if trace.error is not None or not case.gold_rules:
        return 0.0
    inside = set(trace.units) | set(trace.closure_ids)
    gold = set(case.gold_rules)
    return len(gold & inside) / len(gold)


def summary(path: str, cases: dict, index: AuditIndex) -> dict:
    traces, problems = read_traces(path)
    if problems:
        print(f"{path}: {len(problems)} unreadable lines (first: {problems[0]})", file=sys.stderr)
    latest = {t.id: t for t in traces}  # the newest trace per case counts
    rows = {}
    for cid, t in latest.items():
        case = cases.get(cid)
        if case is None:
            continue
        rows[cid] = {"share": gold_share(t, case), "all": covers(t, case, index),
                     "tokens": t.context_tokens, "failed": t.error is not None,
                     "keywords": t.keywords}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--save", metavar="RUN_DIR",
                        help="also keep the figures in RUN_DIR/evaluation.json under --part "
                        "(the Studies page's Training runs section shows them)")
    parser.add_argument("--part", default="held-out", help="name of this case set (held-out)")
    args = parser.parse_args()
    index = AuditIndex(PolicyIndex.load(args.index))
    cases = {c.id: c for c in load_cases(args.cases)}
    before, after = summary(args.before, cases, index), summary(args.after, cases, index)
    common = sorted(set(before) & set(after))
    if not common:
        sys.exit("no case is in both trace files")
    figures = {}
    for name, rows in (("before", before), ("after", after)):
        r = [rows[c] for c in common]
        n = len(r)
        figures[name] = {
            "cases": n,
            "failed": sum(x["failed"] for x in r),
            "gold_share": round(sum(x["share"] for x in r) / n, 4),
            "all_gold_in_context": round(sum(x["all"] for x in r) / n, 4),
            "context_tokens": round(sum(x["tokens"] for x in r) / n, 1),
        }
    ups = sum(after[c]["share"] > before[c]["share"] for c in common)
    downs = sum(after[c]["share"] < before[c]["share"] for c in common)
    figures["paired"] = {"better": ups, "worse": downs, "same": len(common) - ups - downs,
                         "changed_keywords": sum(after[c]["keywords"] != before[c]["keywords"]
                                                 for c in common)}
    for name in ("before", "after"):
        f = figures[name]
        print(f"{name:6}  {f['cases']} cases, {f['failed']} failed: gold share {f['gold_share']:.3f}, "
              f"all gold in context {f['all_gold_in_context']:.3f}, {f['context_tokens']:.0f} tokens")
    p = figures["paired"]
    print(f"paired: {p['better']} better, {p['worse']} worse, {p['same']} same; "
          f"keywords changed on {p['changed_keywords']}")
    print(json.dumps(figures))
    if args.save:
        from workbench.train.runs import save_evaluation

        save_evaluation(args.save, args.part, figures)


if __name__ == "__main__":
    main()
