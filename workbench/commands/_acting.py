"""Who acts on the command line, for the commands that record people's decisions (``review
decide``/``undo``, ``annotate label``): the same people and roles as the pages. ``--as NAME``
(or ``WORKBENCH_USER``) names the person; once `workbench people` lists anyone the store
checks the roster's role, exactly as for a person signed in on the page, and the record is
made under that person's own name. With an empty roster the command line is the single user
(it owns the database file) and records under the name given.

Not a command itself: ``workbench.cli`` skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench.commands._common import add_actor_option, cli_actor


def add_person(parser: argparse.ArgumentParser, flag: str, what: str) -> None:
    """``flag`` (``--reviewer``/``--annotator``): the name recorded, and ``--as``."""
    parser.add_argument(flag, default=None,
                        help=f"the {what} the record is made under (default: the --as person)")
    add_actor_option(parser)


def acting(args: argparse.Namespace, engine: Any, given: str | None):
    """(name recorded, acting ``roles.Actor``). With a roster the name is the person's own
    (a different ``--reviewer``/``--annotator`` is refused: nobody records for someone else);
    without one, the single user recorded under ``given`` (or ``--as``)."""
    from workbench.commands._common import CliError
    from workbench.identity.roles import SINGLE_USER, Actor

    actor = cli_actor(args, engine)
    given = (given or "").strip()
    if actor.role != SINGLE_USER:
        if given and given != actor.name:
            raise CliError(f"--as {actor.name} records under their own name, not {given!r}",
                           "leave the name out, or pass --as with that person")
        return actor.name, actor
    name = given or (actor.name if getattr(args, "acting_as", None) else "")
    if not name:
        raise CliError("say whose decision this is", "pass --reviewer/--annotator NAME (or --as NAME)")
    return name, Actor.single_user(name)
