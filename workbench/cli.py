"""The ``workbench`` command line: a thin dispatcher over ``workbench.commands.*``.

Every command module exposes ``register(subparsers)`` and sets ``func`` on its parsers via
``set_defaults(func=...)``; the function takes the parsed namespace and returns an exit code.
Heavy imports belong inside those functions so ``workbench --help`` stays fast: building
the parser loads no lab package and none of torch, transformers, peft, datasets, accelerate or
lightrag (``tests/test_command_modules.py``). The research lab's commands
(``commands._common.LAB_COMMANDS``) register only where the lab extra is installed
(``workbench.extras``, as the lab's pages); elsewhere a placeholder says to install it.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from workbench import commands, extras
from workbench.commands._common import LAB_COMMANDS, LAB_EXTRA, lab_placeholder
from workbench.errors import WorkbenchError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="SkillCDG Workbench: compile policies into constraint dependency graphs "
        "and audit agent replies against them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    lab_missing: list[str] | None = None  # looked up once, at the first lab command
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # shared helpers (commands/_common.py), not commands
            continue
        if info.name in LAB_COMMANDS:  # the research lab's: only where the lab is installed
            if lab_missing is None:
                lab_missing = extras.missing_modules(LAB_EXTRA)
            if lab_missing:
                lab_placeholder(sub, LAB_COMMANDS[info.name], lab_missing)
                continue
        module = importlib.import_module(f"workbench.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "lab_placeholder", False):  # as parse_args would
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
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
