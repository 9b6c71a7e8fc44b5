"""What several command modules declare alike: a command group whose actions are
subcommands, and the policy index + audit cases pair of inputs.

Not a command itself: ``workbench.cli`` skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import argparse
from typing import Any

INDEX_HELP = "skillcdg/1 policy index (JSON)"
CASES_HELP = "cases JSONL in the normalised schema"


def command_group(subparsers: Any, name: str, *, help: str, description: str, dest: str,
                  metavar: str = "ACTION") -> Any:
    """A command made of actions (``workbench train data``, ``workbench scaling fit``, ...);
    returns the subparsers to add the actions to. The bare command prints its help and
    exits 2, like any other incomplete command line."""
    parser = subparsers.add_parser(name, help=help, description=description)
    actions = parser.add_subparsers(dest=dest, metavar=metavar)
    parser.set_defaults(func=lambda _args: parser.print_help() or 2)
    return actions


def add_index_and_cases(parser: argparse.ArgumentParser, *, index_help: str = INDEX_HELP,
                        cases_help: str = CASES_HELP) -> None:
    """The required ``--index`` and ``--cases`` of a command that audits or reads cases."""
    parser.add_argument("--index", required=True, help=index_help)
    parser.add_argument("--cases", required=True, help=cases_help)
