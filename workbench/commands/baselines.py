"""``workbench baselines``: build the outside-library baselines' indexes and show their cost.

``workbench baselines index --strategy lightrag|graphrag --index INDEX`` indexes every SKILL
of the policy index with LightRAG or Microsoft GraphRAG (through the gateway's ``extractor``
role; resumable, cached under ``.workbench/baselines/<strategy>``) and prints what it cost
beside the CDG extraction cost when ``--extraction-reports`` names the extraction's reports.
"""

from __future__ import annotations

import argparse

from workbench.commands._common import action, cli_gateway, command_group, load_index_or_fail
from workbench.vocabulary import LightragPresetName, values

STRATEGIES = ("lightrag", "graphrag")


def register(sub: argparse._SubParsersAction) -> None:
    actions = command_group(
        sub, "baselines",
        help="index SKILLs for the library baselines (LightRAG, GraphRAG) and show the cost",
        description="Build a library baseline's (LightRAG, GraphRAG) index of each SKILL and "
        "report its indexing cost next to the CDG extraction cost.", dest="baselines_action")
    p = action(actions, "index", _index, help="index SKILLs with a baseline library (resumable)")
    p.add_argument("--strategy", choices=STRATEGIES, default="lightrag")
    p.add_argument("--index", required=True, help="skillcdg/1 policy index (JSON)")
    p.add_argument("--skills", default="", help="comma-separated SKILL names (default: all)")
    p.add_argument("--extraction-reports", metavar="JSON", default=None,
                   help="CDG extraction reports (a JSON list, as `workbench extract` writes) "
                   "to show their cost beside the baseline's")
    p.add_argument("--root", default=None,
                   help="where indexes live (default .workbench/baselines/<strategy>)")
    p.add_argument("--attach", metavar="URL",
                   help="use a running `workbench model serve` (http://127.0.0.1:PORT/v1) for "
                   "embedded roles instead of starting a model in this process")
    p.add_argument("--no-cache", action="store_true",
                   help="do not use the workbench response cache (the libraries keep their own)")
    p.add_argument("--lightrag-preset", choices=values(LightragPresetName),
                   default=LightragPresetName.DEFAULT,
                   help="with --strategy lightrag: index with the project's chunking (default) "
                   "or the first paper's B.5 (12,000-token chunks, 100 overlap); each preset "
                   "has its own index, as `workbench audit --lightrag-preset` uses it")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def _index(args) -> int:
    import json

    from workbench.audit.baselines import GraphragIndexes, LightragIndexes
    from workbench.commands._common import CliError
    from workbench.evaluate.baseline_costs import cost_rows, format_cost_rows
    from workbench.inputs import read_json

    index = load_index_or_fail(args.index)
    names = [s.strip() for s in args.skills.split(",") if s.strip()] or [s.name for s in index]
    unknown = [s for s in names if s not in index.skills]
    if unknown:
        raise CliError(f"no SKILL named {', '.join(unknown)} in {args.index}",
                       f"choose from {', '.join(s.name for s in index)}")
    reports = []
    if args.extraction_reports:
        reports = read_json(args.extraction_reports)  # InputError names file and line
        if not isinstance(reports, list) or not all(isinstance(r, dict) for r in reports):
            raise CliError(f"{args.extraction_reports} is not a list of extraction reports",
                           "give the reports.json that `workbench extract` wrote")
    make = GraphragIndexes if args.strategy == "graphrag" else LightragIndexes
    gateway = cli_gateway(args.no_cache, args.attach)
    try:
        indexes = make(gateway=gateway, root=args.root)
    except BaseException:  # the library is missing: its error names the install
        gateway.close()
        raise
    costs = []
    variant = args.lightrag_preset if args.strategy == "lightrag" else None
    try:
        for name in names:
            source = index[name].source
            indexes.open(name, source, variant)
            costs.append(indexes.cost(name, source, variant))
    finally:
        indexes.close()
        gateway.close()
    rows = cost_rows([c for c in costs if c is not None], reports)
    print(json.dumps(rows, indent=1) if args.json else format_cost_rows(rows, args.strategy))
    return 0
