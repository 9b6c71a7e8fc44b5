"""``workbench graph stats|closure|export`` over a ``skillcdg/1`` index file, and
``workbench graph diff|edit`` over the SKILL versions in the store (``_graph_edit``)."""

from __future__ import annotations

import argparse
import json
import sys

from workbench.commands import _graph_edit
from workbench.commands._common import action, load_index_or_fail
from workbench.commands._output import add_force_option
from workbench.vocabulary import ErrorKind


def register(sub: argparse._SubParsersAction) -> None:
    graph = sub.add_parser("graph", help="inspect a policy index file (stats, closure, export); "
                                         "compare and edit stored versions (diff, edit)")
    gsub = graph.add_subparsers(dest="graph_command", metavar="ACTION", required=True)

    p = action(gsub, "stats", _stats, help="rules, edges, coupling, depth, cycles, density, complexity")
    p.add_argument("index", help="skillcdg/1 JSON file")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--tokenizer",
        choices=["cl100k", "embedded"],
        default="cl100k",
        help="tokenizer for I_d = T(rules) / T(source): cl100k (default) or the embedded "
        "model's own, read from its GGUF",
    )

    p = action(gsub, "closure", _closure, help="transitive require-closure of seed rules")
    p.add_argument("index")
    p.add_argument("--skill", required=True, help="SKILL name")
    p.add_argument("--seeds", required=True, help="comma-separated rule ids")
    p.add_argument("--budget", type=int, default=None, help="token budget for the rendered closure")
    p.add_argument("--json", action="store_true")
    p.add_argument("--render", action="store_true", help="also print the rendered context")
    p.add_argument("--explain", action="store_true",
                   help="for every rule, the require path from the seed that brought it "
                   "(\"seed R3 -> R7 -> R9\"); with --json as \"paths\"")

    p = action(gsub, "export", _export, help="write the graph as GraphML or skillcdg/1 JSON")
    p.add_argument("index")
    p.add_argument("--format", choices=["graphml", "json"], default="json")
    p.add_argument("--out", help="output file (default: standard output); an existing file is "
                   "replaced only with --force")
    add_force_option(p)

    _graph_edit.add_diff(action(gsub, "diff", _graph_edit.diff,
                                help="what changed between two stored versions of a SKILL"))
    _graph_edit.add_edit(action(
        gsub, "edit", _graph_edit.edit,
        help="edit a stored SKILL (rule fields, rules, edges) or accept/reject its proposed "
             "edges: one new version, as the Graph page saves it"))


def _stats(args) -> int:
    from dataclasses import asdict

    from workbench.commands._common import CliError
    from workbench.graph.stats import corpus_totals, skill_stats
    from workbench.llm.errors import EmbeddedModelUnavailable
    from workbench.llm.gguf_tokenizer import GgufTokenizerError
    from workbench.llm.tokens import TOKENIZERS

    index = load_index_or_fail(args.index)
    try:
        rows = {s.name: asdict(skill_stats(s, args.tokenizer)) for s in index}
        total = asdict(corpus_totals(list(index), args.tokenizer))
    except (EmbeddedModelUnavailable, GgufTokenizerError) as exc:
        raise CliError(f"{exc}; or count with --tokenizer cl100k") from None
    for w in index.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"skills": rows, "total": total}, indent=1))
        return 0
    # Table 9's layout: per SKILL its depth and whether it has a cycle; the TOTAL row has
    # the mean depth over SKILLs and the number of SKILLs with a cycle (the paper's totals).
    cols = ["rules", "edges", "coupling", "depth", "cycles", "density", "complexity"]
    cells_of = {
        name: [r["rules"], r["edges"], r["coupling"], r["max_depth"], int(r["has_cycle"]),
               r["density"], r["complexity"]]
        for name, r in rows.items()
    }
    cells_of["TOTAL"] = [
        total["rules"], total["edges"], total["coupling"], total["mean_depth"],
        total["skills_with_cycle"], total["density"], total["complexity"],
    ]
    width = max([len("TOTAL"), *map(len, rows)])
    print(f"{'skill':<{width}}  " + "  ".join(f"{c:>10}" for c in cols))
    for name, values in cells_of.items():
        cells = [f"{v:>10.3f}" if isinstance(v, float) else f"{v!s:>10}" for v in values]
        print(f"{name:<{width}}  " + "  ".join(cells))
    print(
        f"density I_d = T(rule conditions + actions) / T(SKILL source), tokenizer: "
        f"{args.tokenizer} ({TOKENIZERS[args.tokenizer]}); TOTAL depth is the mean over "
        f"{total['skills']} SKILLs, cycles the number of SKILLs with one"
    )
    return 0


def _closure(args) -> int:
    from workbench.commands._common import CliError
    from workbench.graph import UnknownRule
    from workbench.graph.closure import BudgetExceeded, EmptySeed, select_closure

    index = load_index_or_fail(args.index)
    seeds = [s.strip() for s in args.seeds.split(",") if s.strip()]
    try:
        outcome = select_closure(index, {args.skill: seeds}, budget=args.budget)
    except UnknownRule as exc:  # a KeyError too: caught first, or it would read as a SKILL
        raise CliError(f"{exc}. List rule ids with `workbench graph export {args.index}`.") from None
    except KeyError as exc:
        raise CliError(f"{exc.args[0]}. Pass --skill with one of those names.") from None
    if isinstance(outcome, EmptySeed):
        raise CliError("no seeds given: pass --seeds ID,ID")
    if isinstance(outcome, BudgetExceeded):
        if args.json:
            print(json.dumps({"outcome": ErrorKind.BUDGET_EXCEEDED, "closure": outcome.rules[args.skill],
                              "tokens": outcome.tokens, "budget": outcome.budget}))
        print(f"error: {outcome.message}", file=sys.stderr)
        return 3
    ids = outcome.rules[args.skill]
    paths = outcome.paths[args.skill]
    if args.json:
        out = {"outcome": "Closure", "skill": args.skill, "seeds": seeds, "closure": ids,
               "tokens": outcome.tokens}
        if args.explain:
            out["paths"] = paths
        if args.render:
            out["context"] = outcome.text
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"closure ({len(ids)} rules, {outcome.tokens} tokens): {', '.join(ids)}")
        if args.explain:
            from workbench.graph.closure import explain_path

            for rid in ids:
                print(f"  {rid}: {explain_path(paths[rid])}")
        if args.render:
            print()
            print(outcome.text)
    return 0


def _export(args) -> int:
    from workbench.commands._output import check_output, write_output

    if args.out:
        check_output(args.out, force=args.force)  # before any work
    index = load_index_or_fail(args.index)
    if args.format == "json":
        text = index.dumps()
    else:
        from workbench.graph.graphml import to_graphml

        text = to_graphml(index)
    if args.out:
        print(f"{write_output(args.out, text, force=args.force)} {args.out}")
    else:
        sys.stdout.write(text)
    return 0
