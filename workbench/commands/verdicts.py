"""``workbench verdicts``: a stored dataset's decided verdicts, one per case and strategy —
the record every page reads (``workbench.decision.DecidedVerdict``), headless.

``workbench verdicts --dataset D [--run R] [--json]`` prints each case's label (violation,
compliant or review), the score and where it comes from with the setting's version, the rules
behind the label with their text, the words of the reply they rest on, the reason, the gold
label and the review state — what the Review card shows. ``--json``: one object per line.

``--explain`` first asks the judge for the rule and the words of every score-decided
violation that has none yet ("Find the rule", ``workbench.audit.judge.explain``; ``--again``:
also those explained before) and stores the answers (``store.explanations``, needs "store
audit results"). ``--measure`` adds how often the found rule is a gold rule of the case and how
often it carries validated evidence, for score-decided and judge-decided violations apart.
"""

from __future__ import annotations

import argparse
import json
import sys

from workbench.commands._common import action, add_actor_option, no_stored_traces

DB_HELP = "SQLAlchemy URL of the workbench database (default: WORKBENCH_DB or .workbench/workbench.db)"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = action(subparsers, "verdicts", run_verdicts,
               help="a stored dataset's decided verdicts, as every page shows them",
               description="One decided verdict per case and strategy of a stored dataset: "
               "label (violation / compliant / review), score and its source, the setting's "
               "version, rules, evidence, reason and review — what the Review card shows.")
    p.add_argument("--dataset", required=True, help="the dataset the traces are stored under")
    p.add_argument("--run", action="append", metavar="RUN",
                   help="only these runs (repeatable; default: every run, newest trace)")
    p.add_argument("--json", action="store_true", help="one JSON object per line and case")
    p.add_argument("--explain", action="store_true",
                   help="first find the rule and words of each score-decided violation that "
                   "has none (runs the judge model; answers are stored)")
    p.add_argument("--again", action="store_true",
                   help="with --explain: ask again for those explained before")
    p.add_argument("--measure", action="store_true",
                   help="how often the rule behind a violation is a gold rule, and carries "
                   "evidence, for score-decided and judge-decided violations (to stderr with --json)")
    p.add_argument("--no-cache", action="store_true", help="with --explain: no response cache")
    p.add_argument("--db", help=DB_HELP)
    add_actor_option(p)


def _explain(engine, args, verdicts, cases) -> int:
    """Find the rule of each verdict that needs one; store the answers; how many asked."""
    from store.explanations import save_explanations
    from workbench.audit.judge.explain import explain_violation, to_explain
    from workbench.commands._common import cli_actor, cli_gateway

    wanted = [v for v in to_explain(verdicts, again=args.again) if v.case in cases]
    if not wanted:
        return 0
    actor = cli_actor(args, engine)
    traces = _traces(engine, args)
    gateway = cli_gateway(args.no_cache)
    try:
        for n, v in enumerate(wanted, 1):
            trace = traces[v.key]
            found = explain_violation(gateway, cases[v.case], trace, v.score)
            save_explanations(engine, args.dataset, [(v.run, trace, found.explanation)], actor=actor)
            rule = found.explanation.rule or "no rule found"
            print(f"[{n}/{len(wanted)}] {v.case}: {rule}", file=sys.stderr)
    finally:
        close = getattr(gateway, "close", None)
        if close is not None:
            close()
    return len(wanted)


def _traces(engine, args):
    from store.audit_repo import run_traces

    return {(run, t.id, t.strategy): t for run, t in run_traces(engine, args.dataset, args.run)}


def run_verdicts(args: argparse.Namespace) -> int:
    from store.audit_repo import load_cases
    from store.db import make_engine
    from store.verdicts import dataset_verdicts

    engine = make_engine(args.db)
    cases = {c.id: c for c in load_cases(engine, args.dataset)}
    verdicts = dataset_verdicts(engine, args.dataset, args.run)
    if not verdicts:
        raise no_stored_traces(args.dataset, args.run,
                               "audit with `workbench audit --store DATASET` or `workbench "
                               "import-traces`")
    if args.explain and _explain(engine, args, verdicts, cases):
        verdicts = dataset_verdicts(engine, args.dataset, args.run)
    rules = _rule_texts(engine)
    for v in verdicts:
        gold = cases[v.case].label if v.case in cases else None
        if args.json:
            print(json.dumps(_json(v, gold, rules), ensure_ascii=False))
        else:
            print(_text(v, gold, rules))
    if args.measure:
        _measure(verdicts, cases, sys.stderr if args.json else sys.stdout)
    return 0


def _rule_texts(engine) -> dict[str, dict]:
    """Rule id -> its SKILL, modality, condition and action, for every stored SKILL."""
    from store.repo import export_index

    out: dict[str, dict] = {}
    for skill in export_index(engine):
        for rid, rule in skill.graph.rules.items():
            out.setdefault(rid, {"id": rid, "skill": skill.name, "modality": str(rule.modality),
                                 "when": rule.condition, "then": rule.action})
    return out


def _json(v, gold, rules) -> dict:
    from workbench import words
    from workbench.vocabulary import label_violation

    out = v.to_json()
    out["words"] = words.probability(v.decided) if v.score is not None else None
    out["gold"] = words.gold_word(gold) if label_violation(gold) is not None else None
    out["rule_text"] = [rules[r] for r in v.rules if r in rules]
    return out


def _text(v, gold, rules) -> str:
    from workbench import words
    from workbench.vocabulary import label_violation

    head = f"{v.case} · {v.strategy} · run {v.run}: {v.label.upper()}"
    if v.score is not None:
        source = "activation score" if v.score_source == "activations" else "judge's words"
        # Version 0 is the built-in activation scorer, never "v0".
        version = (f", {words.setting_words(v.setting_version)}"
                   if v.setting_version is not None else "")
        head += f" — {words.probability(v.decided)} ({source}{version})"
    lines = [head]
    if label_violation(gold) is not None:
        lines.append(f"  gold: {words.gold_word(gold)}")
    lines.append(f"  reason ({v.reason_by}): {v.reason}")
    for rid in v.rules:
        r = rules.get(rid)
        lines.append(f"  rule {rid}" + (f" ({r['skill']}, {r['modality']}): when {r['when']}; "
                                        f"then {r['then']}" if r else ""))
    for e in v.evidence:
        lines.append(f"  words: “{e['quote']}” ({e['start']}–{e['end']})")
    if v.review is not None:
        r = v.review
        lines.append(f"  review: {r.reviewer} {r.decision} (shown {r.shown}, says "
                     f"{r.analyst_label})")
    return "\n".join(lines)


def _measure(verdicts, cases, out) -> None:
    from workbench.audit.judge.explain import rule_finding
    from workbench.vocabulary import label_violation

    gold = {}
    for cid, c in cases.items():
        if not label_violation(c.label):  # a compliant case has no rule broken to find
            continue
        # The violated rules where annotated, else the governing ones (CompliBench's import
        # keeps the violated guideline there).
        extra = (c.extra or {}).get("gold")
        violated = extra.get("violated_rules") if isinstance(extra, dict) else None
        if ids := [str(r) for r in violated or []] or c.gold_rules:
            gold[cid] = ids
    for f in rule_finding(verdicts, gold):
        d = f.as_dict()
        share = "–" if d["share_gold_rule"] is None else f"{d['share_gold_rule']:.0%}"
        ev = "–" if d["share_with_evidence"] is None else f"{d['share_with_evidence']:.0%}"
        print(f"{f.kind} violations: {f.violations}; with a rule {f.with_rule}; found rule is "
              f"a gold rule {f.gold_rule} of {f.with_gold} with gold rules ({share}); with "
              f"validated evidence {f.with_evidence} ({ev})", file=out)
