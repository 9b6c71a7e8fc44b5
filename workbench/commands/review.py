"""``workbench review``: the Review page's decisions from the command line, for teams that
script their audits. They go through the same store functions and role checks as the page
(``store.review.add_decisions``, ``undo_last``), so a decision made here shows on the page.

``workbench review decide --dataset D --case C [--strategy S] [--run R] --decision
confirm|overturn|wrong-rule [--note TEXT] [--reviewer NAME] [--as NAME] [--db URL]`` decides
the newest judged trace of that case and strategy (among ``--run`` runs, as the page's queue
picks it). ``workbench review undo --dataset D [--reviewer NAME] [--as NAME]`` takes back that reviewer's
last action (a bulk decision whole). ``workbench review decisions --dataset D [--case C]
[--json]`` lists the records, undos included. ``workbench review next --dataset D [--k 10]
[--alpha 0.1] [--json]`` lists the cases to label next (the Review page's "Label next" order)
and how many more labelled cases a promise at α needs (``workbench.review.labelling``).
"""

from __future__ import annotations

import argparse
import json

from workbench.commands._acting import acting, add_person
from workbench.commands._common import CliError, action, command_group, no_stored_traces

DB_HELP = "SQLAlchemy URL of the workbench database (default: WORKBENCH_DB or .workbench/workbench.db)"
# workbench.review.decisions.DECISIONS, spelled out so building the parser imports nothing
# heavy; a test keeps the two equal.
DECISIONS = ("confirm", "overturn", "wrong-rule")


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = command_group(subparsers, "review", help="decide audit verdicts (the Review page's decisions)",
                        description="Confirm, overturn or mark 'right verdict, wrong rule' on "
                        "stored audit verdicts, undo, and list the decisions.",
                        dest="review_command")
    decide = action(sub, "decide", run_decide, help="record a decision on a stored verdict",
                    description="Record one decision on the newest judged trace of a case "
                    "(under one strategy), as the Review page does.")
    decide.add_argument("--dataset", required=True, help="the dataset the traces are stored under")
    decide.add_argument("--case", required=True, help="case id")
    decide.add_argument("--strategy", help="strategy (needed when the case has several)")
    decide.add_argument("--run", action="append", metavar="RUN",
                        help="only these runs (repeatable; default: every run, newest trace)")
    decide.add_argument("--decision", required=True, choices=DECISIONS,
                        help="confirm | overturn (note needed) | wrong-rule: the violation is "
                        "right but the cited rule is not (note names the right one)")
    decide.add_argument("--note", default="", help="why (required for overturn and wrong-rule)")
    _who(decide)

    undo = action(sub, "undo", run_undo, help="take back a reviewer's last action",
                  description="Withdraw the reviewer's last decision in the dataset (all of a "
                  "bulk decision) by an undo record; the earlier decision, if any, counts again.")
    undo.add_argument("--dataset", required=True)
    _who(undo)

    nxt = action(sub, "next", run_next, help="the cases to label next, and the labels a promise needs",
                 description="The cases of the dataset nobody has labelled yet (no gold label, no "
                 "decision) that the scorer deciding it now is least sure of, one per "
                 "conversation and SKILL in turn (the Review page's 'Label next' order); then "
                 "how many labelled cases a promise at --alpha needs, from the error rate of "
                 "the most confident half of the labelled cases so far, tested at ten levels "
                 "and split-certified.")
    nxt.add_argument("--dataset", required=True, help="the dataset the traces are stored under")
    nxt.add_argument("--run", action="append", metavar="RUN",
                     help="only these runs (repeatable; default: every run, newest trace)")
    nxt.add_argument("--k", type=int, default=10, help="how many cases to propose (default 10)")
    nxt.add_argument("--alpha", type=float, default=0.10,
                     help="the share of wrong automatic decisions the promise allows (default 0.1)")
    nxt.add_argument("--json", action="store_true",
                     help="one JSON object: the proposals and the forecast")
    nxt.add_argument("--db", help=DB_HELP)

    listing = action(sub, "decisions", run_decisions, help="list the stored decision records")
    listing.add_argument("--dataset", required=True)
    listing.add_argument("--case", help="only this case")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.add_argument("--db", help=DB_HELP)


def _who(parser: argparse.ArgumentParser) -> None:
    add_person(parser, "--reviewer", "reviewer")
    parser.add_argument("--db", help=DB_HELP)


def _queue(engine, args, saved=True):
    """Every judged verdict of ``--dataset`` (``--run`` runs) as the Review page's queue holds
    it, with the decided record its card shows (``store.verdicts``); ``saved``: the dataset's
    (version, setting) already read (None: none), True to read it."""
    from store.audit_repo import load_cases, run_traces
    from store.explanations import explanations_for
    from store.review import decisions_for
    from store.verdicts import dataset_setting
    from workbench.decision import decided_verdicts
    from workbench.review.queue import build_queue, latest_records

    records = run_traces(engine, args.dataset, args.run)
    if not records:
        raise no_stored_traces(args.dataset, args.run,
                               "check the name with `workbench review decisions` or audit with "
                               "`workbench audit --store DATASET`")
    labels = {c.id: c.label for c in load_cases(engine, args.dataset) if c.label}
    saved = dataset_setting(engine, args.dataset) if saved is True else saved
    verdicts = {v.key: v for v in decided_verdicts(
        latest_records(records), saved,
        explanations_for(engine, args.dataset), decisions_for(engine, args.dataset))}
    return build_queue(records, labels, args.dataset, verdicts=verdicts)


def _verdict(engine, args):
    """The queue item ``--case``/``--strategy`` names (the newest judged trace), with the
    decided record the Review card shows for it."""
    items = [i for i in _queue(engine, args) if i.case_id == args.case]
    if args.strategy:
        items = [i for i in items if i.strategy == args.strategy]
    if not items:
        raise CliError(f"case {args.case!r} has no judged verdict in dataset {args.dataset!r}"
                       + (f" under strategy {args.strategy}" if args.strategy else ""),
                       "a trace audited without a judge has nothing to decide; pass the case "
                       "id as the traces store it")
    if len(items) > 1:
        raise CliError(f"case {args.case!r} has verdicts of several strategies: "
                       f"{', '.join(i.strategy for i in items)}", "pass --strategy")
    return items[0]


def run_decide(args: argparse.Namespace) -> int:
    from store.db import make_engine
    from store.review import add_decision
    from workbench.review.queue import decision_on

    engine = make_engine(args.db)
    name, actor = acting(args, engine, args.reviewer)
    item = _verdict(engine, args)
    decision = decision_on(item.verdict, item.dataset, name, args.decision, args.note)
    record = add_decision(engine, decision, actor=actor)
    said = f"; your label: {decision.analyst_label}" if decision.analyst_label else ""
    print(f"recorded #{record}: {name} {decision.words} the {item.strategy} "
          f"verdict ({decision.shown}) on {item.case_id} in run {item.run_id}{said}")
    return 0


def run_undo(args: argparse.Namespace) -> int:
    from store.db import make_engine
    from store.review import undo_last
    from workbench.review.decisions import describe_action

    engine = make_engine(args.db)
    name, actor = acting(args, engine, args.reviewer)
    undone = undo_last(engine, args.dataset, name, actor=actor)
    if not undone:
        print(f"nothing to undo: {name} has no decision in {args.dataset}")
        return 1
    print(f"undone: {describe_action(undone)}")
    return 0


def run_next(args: argparse.Namespace) -> int:
    from store.db import make_engine
    from store.review import decisions_for
    from store.verdicts import dataset_setting
    from workbench import words
    from workbench.review.labelling import (
        as_json,
        forecast_words,
        label_next,
        labelled_cases,
        queue_forecast,
    )

    if args.k < 1:
        raise CliError("--k must be at least 1", "ask for the number of cases to propose")
    if not 0 < args.alpha < 1:
        raise CliError("--alpha must be between 0 and 1", "e.g. --alpha 0.1 for 10 %")
    engine = make_engine(args.db)
    saved = dataset_setting(engine, args.dataset)
    items = _queue(engine, args, saved)
    decisions = decisions_for(engine, args.dataset)
    threshold = saved[1].threshold if saved else 0.5
    picked = label_next(items, decisions, threshold, args.k)
    forecast = queue_forecast(items, decisions, args.alpha)
    cases = {i.case_id for i in items}
    labelled = len(cases & set(labelled_cases(items, decisions)))
    by = words.decided_by(i.verdict.setting_version for i in items)
    if args.json:
        print(json.dumps({"dataset": args.dataset, "cases": len(cases), "labelled": labelled,
                          "decided_by": by,
                          "proposals": [as_json(i, n, threshold) for n, i in enumerate(picked, 1)],
                          "forecast": forecast.to_json()}, ensure_ascii=False))
        return 0
    print(f"{args.dataset}: {words.plural(len(cases), 'case')}, {labelled} labelled; decided by {by}.")
    if not picked:
        print("Nothing to propose: every case here has a gold label or an analyst's decision.")
    else:
        print(f"Label next ({len(picked)}; least sure first, one per conversation and SKILL "
              "in turn):")
        for n, i in enumerate(picked, 1):
            v = i.verdict
            sure = words.probability(v.decided) if v.score_source is not None else "no score"
            print(f"  {n}. {i.case_id} · {i.strategy} · run {i.run_id} · conversation "
                  f"{i.trace.session or i.case_id} · SKILL {(i.trace.skills or ['–'])[0]} · "
                  f"{sure}")
    print(forecast_words(forecast))
    return 0


def run_decisions(args: argparse.Namespace) -> int:
    from store.db import make_engine
    from store.review import decisions_for

    rows = decisions_for(make_engine(args.db), args.dataset, case_id=args.case)
    for d in rows:
        record = {"id": d.id, "when": d.created_at.isoformat(), "reviewer": d.reviewer,
                  "run": d.run_id, "case": d.case_id, "strategy": d.strategy,
                  "decision": d.decision, "note": d.note, "shown": d.shown,
                  "shown_source": d.shown_source, "setting_version": d.setting_version,
                  "analyst_label": d.analyst_label, "judge_violation": d.judge_violation,
                  "batch": d.batch, "undoes": d.undoes}
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
        else:
            undo = f" (undoes #{d.undoes})" if d.undoes is not None else ""
            said = (f" (shown {d.shown}, says {d.analyst_label})"
                    if d.shown and d.analyst_label else "")
            print(f"#{d.id} {record['when']} {d.reviewer}: {d.decision}{undo}{said} "
                  f"{d.strategy}/{d.case_id} [{d.run_id}] {d.note}")
    if not rows and not args.json:
        print(f"no decisions in {args.dataset}" + (f" on {args.case}" if args.case else ""))
    return 0
