"""What several command modules declare alike: the command line's own error (``CliError``),
a command group whose actions are subcommands, the policy index + audit cases pair of inputs
(and their loading as CLI errors), the model gateway and the acting identity.

Command modules never import each other: what two of them share lives here (or in another
``_``-prefixed module), which ``tests/test_command_modules.py`` checks.

Not a command itself: ``workbench.cli`` skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from workbench.errors import WorkbenchError
from workbench.settings import USER


class CliError(WorkbenchError):
    """A user error met by the command line itself (a bad flag combination, a missing file):
    the message says what went wrong and what to do. Exit code 2, as for every WorkbenchError
    (``workbench.cli.main`` prints it)."""


# The research lab's commands (issue 49): command module -> the command it registers. Like the
# lab's pages in app.py, they register as usual where the lab extra is installed
# (``workbench.extras``, which knows its modules and finds them without importing any), and
# elsewhere as a placeholder (``lab_placeholder``) that says how to install it.
LAB_EXTRA = "lab"
LAB_COMMANDS: dict[str, str] = {
    "train": "train",
    "scaling": "scaling",
    "scaling_outcomes": "scaling-outcomes",
    "evaluate": "evaluate",
    "baselines": "baselines",
}


def no_stored_traces(dataset: str, runs: Sequence[str] | None, fix: str) -> CliError:
    """The error of a command that reads a dataset's stored traces and found none."""
    return CliError(f"no stored traces in dataset {dataset!r}"
                    + (f" for run(s) {', '.join(runs)}" if runs else ""), fix)


def lab_placeholder(subparsers: Any, command: str, missing: Sequence[str]) -> Any:
    """``workbench COMMAND`` of the lab where the lab is not installed: its help says how to
    install it, and run with any arguments it exits 2 saying the same (``workbench.cli.main``
    lets a placeholder's arguments through: they are the real command's)."""
    from workbench.extras import EXTRAS, ExtraMissing

    short = f"part of the research lab: install it with {EXTRAS[LAB_EXTRA].install}"
    message = f"workbench {command} is {short} (missing here: {', '.join(missing)})"

    def refuse(_args: argparse.Namespace) -> int:
        raise ExtraMissing(message)

    parser = subparsers.add_parser(command, help=short, description=message)
    parser.set_defaults(func=refuse, lab_placeholder=True)
    return parser


INDEX_HELP = "skillcdg/1 policy index (JSON)"
CASES_HELP = "cases JSONL in the normalised schema"


def command_group(subparsers: Any, name: str, *, help: str, description: str | None = None, dest: str,
                  metavar: str = "ACTION") -> Any:
    """A command made of actions (``workbench train data``, ``workbench scaling fit``, ...);
    returns the subparsers to add the actions to. The bare command prints its help and
    exits 2, like any other incomplete command line."""
    parser = subparsers.add_parser(name, help=help, description=description)
    actions = parser.add_subparsers(dest=dest, metavar=metavar)
    parser.set_defaults(func=lambda _args: parser.print_help() or 2)
    return actions


def action(actions: Any, name: str, func: Any, *, help: str, description: str | None = None) -> Any:
    """One action of a command group (or a command of its own), run by ``func(args)``;
    returns its parser."""
    parser = actions.add_parser(name, help=help, description=description)
    parser.set_defaults(func=func)
    return parser


def add_index_and_cases(parser: argparse.ArgumentParser, *, index_help: str = INDEX_HELP,
                        cases_help: str = CASES_HELP) -> None:
    """The required ``--index`` and ``--cases`` of a command that audits or reads cases."""
    parser.add_argument("--index", required=True, help=index_help)
    parser.add_argument("--cases", required=True, help=cases_help)


def load_index_or_fail(path: str):
    """Load an index, turning file and validation problems into CLI errors."""
    from workbench.graph import PolicyIndex

    try:
        return PolicyIndex.load(path)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None


def load_cases_or_fail(path: str):
    """Load audit cases, turning file and format problems into CLI errors."""
    from workbench.audit.cases import load_cases

    try:
        return load_cases(path)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None


def audit_index_and_cases(args, strategy: str | None = None):
    """``args.index`` as an ``AuditIndex`` and ``args.cases`` as audit cases, a problem with
    either raised as a CLI error; with ``strategy``, first check that it names a strategy."""
    from workbench.audit import AuditIndex
    from workbench.audit.strategies import STRATEGIES

    if strategy is not None and strategy not in STRATEGIES:
        raise CliError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return AuditIndex(load_index_or_fail(args.index)), load_cases_or_fail(args.cases)


def cli_gateway(no_cache: bool, attach: str = ""):
    """The gateway of a command and of each Ray worker (module-level, so Ray can pickle it by
    name): the database response cache and usage log unless ``no_cache``; embedded roles use
    the running `workbench model serve` at ``attach`` when given."""
    from workbench.llm import Gateway
    from workbench.llm.config import load_config

    config = load_config().attached_to(attach) if attach else None
    if no_cache:
        return Gateway.from_env(config)
    from store.db import make_engine
    from store.llm_cache import persistent_gateway

    return persistent_gateway(make_engine(), config)


def add_actor_option(parser: argparse.ArgumentParser) -> None:
    """``--as NAME``: who a command that writes acts as (the roster's person and role)."""
    parser.add_argument("--as", dest="acting_as", metavar="NAME",
                        help=f"act as this person of the roster, with their role (default: "
                             f"${USER.name}); needed once `workbench people` lists anyone")


def cli_actor(args: argparse.Namespace, engine: Any):
    """The acting ``roles.Actor`` of a command: the person ``--as`` (or ``WORKBENCH_USER``)
    names, with the roster's role, the same identities and roles as the pages; the single
    user while the roster is empty. With a roster and no name, a ``CliError`` says to give one
    (a guarded write would be refused anyway)."""
    from store.people import command_line_actor

    return _acting(command_line_actor(engine, _acting_name(args)))


def cli_actor_before_upgrade(args: argparse.Namespace, url: str | None = None):
    """:func:`cli_actor` against the database at ``url`` (else ``WORKBENCH_DB``) as it is
    stored: read without creating or migrating it (``db upgrade`` asks before upgrading;
    ``model set`` writes no database at all)."""
    from store.db import roster_as_stored
    from store.people import roster_actor

    return _acting(roster_actor(roster_as_stored(url), _acting_name(args)))


def _acting_name(args: argparse.Namespace) -> str | None:
    return (getattr(args, "acting_as", None) or USER.read(default="")).strip() or None


def _acting(actor):
    if actor.role is None:
        raise CliError("roles are configured on this workbench (`workbench people list` shows "
                       "who): say who is acting", f"pass --as NAME or set {USER.name}")
    return actor


def saved_threshold(scope: str):
    """The current saved DecisionSetting of ``scope`` (``dataset:NAME`` / ``policy:NAME``);
    one home for ``metrics``, ``convert`` and ``export-verdicts`` ``--threshold``."""
    from store.db import make_engine
    from store.thresholds import current_threshold

    kind, _, name = scope.partition(":")
    if kind not in ("dataset", "policy") or not name:
        raise CliError(f"{scope!r} is not a threshold scope",
                       "give a number from 0 to 1, dataset:NAME or policy:NAME")
    found = current_threshold(make_engine(), scope)
    if found is None:
        raise CliError(f"no threshold is saved for {scope}",
                       f"choose one with `workbench calibrate ... --save {scope}`")
    return found[1]


def threshold_arg(value: str | None):
    """``--threshold``: a probability (float), or the saved decision setting (a
    ``DecisionSetting``) of ``dataset:NAME`` / ``policy:NAME`` in the workbench database."""
    if value is None:
        return None
    try:
        t = float(value)
    except ValueError:
        pass
    else:
        if not 0.0 <= t <= 1.0:
            raise CliError(f"--threshold {value} is not a probability", "give a number from 0 to 1")
        return t
    return saved_threshold(value)


def default_beside(paths) -> tuple[int, Any] | None:
    """With no ``--threshold``: the built-in activation scorer (version 0) when every traces
    file has activations beside it holding the feature it reads, else None (the judge's words
    decide) — ``workbench.decision.default_setting``, as the store decides a dataset."""
    from pathlib import Path

    from workbench.decision import default_setting
    from workbench.decision.features import features_dir, read_index

    def holds(layer: int) -> bool:
        for path in paths:
            records = read_index(features_dir(Path(path)))
            if not records or not any(layer in r.layers for r in records):
                return False
        return True

    return default_setting(None, holds)


def activation_scores_beside(setting, paths, traces) -> dict[str, float] | None:
    """A saved setting's activation scorer applied to the features captured beside each
    traces file (no model runs); None when the setting reads the judge's probability."""
    from pathlib import Path

    from workbench.decision.apply import activation_scores
    from workbench.decision.features import features_dir

    if getattr(setting, "scorer", None) is None:
        return None
    verbal = {t.id: t.verdict.probability if t.verdict else None for t in traces}
    scores: dict[str, float] = {}
    for path in paths:
        folder = features_dir(Path(path))
        if not folder.is_dir():
            raise CliError(f"the saved setting scores the judge's activations, and {path} has "
                           f"none beside it ({folder})",
                           f"capture them with `workbench features capture {path} --cases ...`")
        scores.update(activation_scores(setting, folder, verbal))
    return scores
