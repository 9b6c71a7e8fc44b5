"""``workbench import INDEX.json`` and ``workbench export-store``: the index file <-> the store."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import a skillcdg/1 index into the workbench database")
    p.add_argument("index")
    p.add_argument("--db", help="SQLAlchemy URL (default: WORKBENCH_DB or .workbench/workbench.db)")
    p.add_argument("--author", default="import")
    p.set_defaults(func=_import)

    p = sub.add_parser("export-store", help="write the latest SKILL versions in the store as skillcdg/1")
    p.add_argument("--out", required=True)
    p.add_argument("--db")
    p.add_argument("--skill", action="append", help="only this SKILL (repeatable)")
    p.set_defaults(func=_export)


def _import(args) -> int:
    from store import repo
    from store.db import make_engine
    from workbench.commands.graph import load_index_or_fail

    index = load_index_or_fail(args.index)
    engine = make_engine(args.db)
    for saved in repo.import_index(engine, index, author=args.author):
        state = "new version" if saved.created else "unchanged"
        print(f"{saved.name}: version {saved.version} ({state})")
    return 0


def _export(args) -> int:
    from store import repo
    from store.db import make_engine
    from workbench.cli import CliError

    engine = make_engine(args.db)
    try:
        index = repo.export_index(engine, args.skill)
    except repo.NotFound as exc:
        raise CliError(str(exc)) from None
    index.save(args.out)
    print(f"wrote {len(index)} SKILL(s) to {args.out}")
    return 0
