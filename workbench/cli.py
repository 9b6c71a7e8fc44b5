"""The ``workbench`` command line: a thin dispatcher over ``workbench.commands.*``.

Every command module exposes ``register(subparsers)`` and sets ``func`` on its parsers via
``set_defaults(func=...)``; the function takes the parsed namespace and returns an exit code.
Heavy imports belong inside those functions so ``workbench --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from workbench import commands
from workbench.errors import WorkbenchError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="SkillCDG Workbench: compile policies into constraint dependency graphs "
        "and audit agent replies against them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # shared helpers (commands/_common.py), not commands
            continue
        module = importlib.import_module(f"workbench.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        # The one place a user error becomes output: commands let WorkbenchErrors through
        # instead of translating each into a CliError. str() is "message; hint".
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
