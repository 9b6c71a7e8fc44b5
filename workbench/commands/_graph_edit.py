"""``workbench graph diff`` and ``workbench graph edit``: compare and edit the SKILL versions
in the store, headless, through what the Graph page uses: the same validation
(``workbench.graph.editing.apply_edits``), the same verdicts (``store.edge_decisions.decide_edges``),
the same roles (``--as``) and the same stale-version guard (``--base-version``)."""

from __future__ import annotations

import argparse
import json

from workbench.commands._common import add_actor_option

RULE_FIELDS = ("condition", "action", "modality")


def add_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("skill", help="SKILL name in the store")
    p.add_argument("--from", dest="old", type=int, help="older version (default: the one "
                   "before --to)")
    p.add_argument("--to", dest="new", type=int, help="newer version (default: the latest)")
    p.add_argument("--db", help="database URL (default: WORKBENCH_DB or .workbench)")
    p.add_argument("--json", action="store_true", help="print the diff as JSON")


def add_edit(p: argparse.ArgumentParser) -> None:
    p.add_argument("skill", help="SKILL name in the store")
    p.add_argument("--base-version", type=int, required=True,
                   help="the version this edit is built on; refused when it is no longer the "
                        "latest (as on the Graph page), so a script never undoes a newer edit")
    p.add_argument("--set", nargs=3, action="append", default=[], metavar=("RULE", "FIELD", "VALUE"),
                   help=f"change a rule's field ({', '.join(RULE_FIELDS)}); repeatable")
    p.add_argument("--add-rule", nargs=4, action="append", default=[],
                   metavar=("ID", "MODALITY", "CONDITION", "ACTION"), help="add a rule; repeatable")
    p.add_argument("--remove-rule", action="append", default=[], metavar="RULE",
                   help="remove a rule and the edges that touch it; repeatable")
    p.add_argument("--add-edge", nargs=2, action="append", default=[], metavar=("SOURCE", "TARGET"),
                   help="add the edge SOURCE requires TARGET; repeatable")
    p.add_argument("--remove-edge", nargs=2, action="append", default=[],
                   metavar=("SOURCE", "TARGET"), help="remove an edge; repeatable")
    p.add_argument("--accept", nargs=2, action="append", default=[], metavar=("SOURCE", "TARGET"),
                   help="accept a proposed edge (or confirm an edge); repeatable")
    p.add_argument("--reject", nargs=2, action="append", default=[], metavar=("SOURCE", "TARGET"),
                   help="reject a proposed edge (or remove an edge); repeatable")
    p.add_argument("--accept-all", action="store_true", help="accept every waiting proposal")
    p.add_argument("--reject-all", action="store_true", help="reject every waiting proposal")
    p.add_argument("--note", default="", help="the author's note, kept beside the computed summary")
    p.add_argument("--dry-run", action="store_true", help="print what would change; save nothing")
    p.add_argument("--db", help="database URL (default: WORKBENCH_DB or .workbench)")
    add_actor_option(p)


def diff(args) -> int:
    from store import repo
    from store.db import make_engine
    from workbench.commands._common import CliError
    from workbench.graph.diff import describe, diff_skills

    engine = make_engine(args.db)
    numbers = [v.version for v in repo.versions(engine, args.skill)]
    if not numbers:
        repo.get_version(engine, args.skill)  # NotFound, naming the SKILLs there are
    new = args.new if args.new is not None else numbers[-1]
    older = [n for n in numbers if n < new]
    old = args.old if args.old is not None else (older[-1] if older else None)
    if old is None:
        raise CliError(f"{args.skill} has no version before {new} to compare with",
                       f"pass --from and --to; versions: {', '.join(map(str, numbers))}")
    change = diff_skills(repo.load_skill(engine, args.skill, old),
                         repo.load_skill(engine, args.skill, new))
    if args.json:
        print(json.dumps({"skill": args.skill, "from": old, "to": new, **change.to_dict()},
                         ensure_ascii=False, indent=1))
        return 0
    print(f"{args.skill}: version {old} -> {new}: {change.summary()}")
    for r in change.rules_added:
        print(f"+ rule {r.id} [{r.modality}] if {r.condition}: {r.action}")
    for r in change.rules_removed:
        print(f"- rule {r.id} [{r.modality}] if {r.condition}: {r.action}")
    for c in change.rules_changed:
        for f in c.changes:
            print(f"~ rule {c.rule_id} {f.field}: {describe(f.before)} -> {describe(f.after)}")
    for e in change.edges_added:
        print(f"+ edge {e.source} -> {e.target}" + (f" ({e.provenance})" if e.provenance else ""))
    for e in change.edges_removed:
        print(f"- edge {e.source} -> {e.target}")
    for c in change.edges_changed:
        for f in c.changes:
            print(f"~ edge {c.pair[0]} -> {c.pair[1]} {f.field}: {describe(f.before)} -> "
                  f"{describe(f.after)}")
    return 0


def edit(args) -> int:
    from store import edge_decisions, repo
    from store.db import make_engine
    from workbench.commands._common import CliError, cli_actor
    from workbench.graph.diff import diff_skills
    from workbench.graph.editing import apply_edge_decisions, apply_edits
    from workbench.identity.roles import require

    edits = args.set or args.add_rule or args.remove_rule or args.add_edge or args.remove_edge
    verdicts_given = args.accept or args.reject or args.accept_all or args.reject_all
    if not edits and not verdicts_given:
        raise CliError("nothing to do", "give --set, --add-rule, --remove-rule, --add-edge, "
                       "--remove-edge, --accept, --reject, --accept-all or --reject-all")
    if edits and verdicts_given:
        raise CliError("rule and edge edits and accept/reject decisions are separate versions "
                       "(as on the Graph page)", "run the edits and the decisions as two commands")
    engine = make_engine(args.db)
    actor = cli_actor(args, engine)
    require(actor, "edit graphs")  # before any work: the store would refuse the save anyway
    skill = repo.load_skill(engine, args.skill, args.base_version)

    if verdicts_given:
        verdicts = ([(tuple(p), True) for p in args.accept] + [(tuple(p), False) for p in args.reject]
                    + [(e.pair, True) for e in skill.proposed if args.accept_all]
                    + [(e.pair, False) for e in skill.proposed if args.reject_all])
        if not verdicts:
            raise CliError(f"{args.skill} v{args.base_version} has no proposed edge waiting",
                           "nothing to accept or reject")
        if args.dry_run:
            print(f"would decide {len(verdicts)} edge(s): "
                  f"{diff_skills(skill, apply_edge_decisions(skill, verdicts)).summary()}")
            return 0
        done = edge_decisions.decide_edges(engine, args.skill, args.base_version, verdicts, actor,
                                           note=args.note)
        where = (f"saved as version {done.version}" if done.created
                 else f"recorded; the graph is unchanged (version {done.version})")
        print(f"{args.skill}: {done.accepted} accepted, {done.rejected} rejected, {where}: "
              f"{done.summary}")
        return 0

    rows = {r.id: {"id": r.id, "condition": r.condition, "action": r.action,
                   "modality": r.modality} for r in skill.graph.rules.values()}
    for rid, field, value in args.set:
        if field not in RULE_FIELDS:
            raise CliError(f"--set {rid} {field}: no such field", f"use one of {', '.join(RULE_FIELDS)}")
        if rid not in rows:
            raise CliError(f"--set {rid}: {args.skill} v{args.base_version} has no rule {rid}",
                           "list its rules with `workbench export-store` or the Graph page")
        rows[rid][field] = value
    for rid, modality, condition, action_text in args.add_rule:
        if rid in rows:
            raise CliError(f"--add-rule {rid}: the rule exists", f"use --set {rid} FIELD VALUE")
        rows[rid] = {"id": rid, "condition": condition, "action": action_text, "modality": modality}
    gone = set(args.remove_rule)
    for rid in gone - set(rows):
        raise CliError(f"--remove-rule {rid}: no such rule in {args.skill} v{args.base_version}")
    removed = {tuple(p) for p in args.remove_edge}
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges
             if e.pair not in removed and not gone & set(e.pair)]
    missing = removed - {e.pair for e in skill.graph.edges}
    if missing:
        raise CliError(f"--remove-edge {' '.join(sorted(missing)[0])}: no such edge",
                       "`workbench graph diff` and the Graph page list the edges")
    edges += [{"source": s, "target": t} for s, t in args.add_edge]
    result = apply_edits(skill, [r for rid, r in rows.items() if rid not in gone], edges)
    if not result.ok:
        raise CliError("nothing was saved:\n" + "\n".join(f"  - {p}" for p in result.problems),
                       "fix these and run the command again")
    if args.dry_run or result.summary == "no changes":
        print(f"{args.skill}: {'would change' if args.dry_run else 'nothing to save'}: "
              f"{result.summary}")
        return 0
    saved = repo.save_skill(engine, result.skill, author=actor.name, note=args.note,
                            base_version=args.base_version, actor=actor, trust=True)
    print(f"{args.skill}: saved version {saved.version}: {result.summary}")
    return 0
