"""Who acts on the command line, for the commands that record people's decisions (``review
decide``, ``annotate label``): a name recorded with each record and, with ``--role``, the
role the store checks, exactly as on the pages (``workbench.roles``). Without ``--role`` the
command line is single-user (it owns the database file), like a page nobody signed in to.

Not a command itself: ``workbench.cli`` skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import argparse

from workbench.roles import ROLES, Actor


def add_role(parser: argparse.ArgumentParser, *, default: str | None = None) -> None:
    parser.add_argument(
        "--role", choices=ROLES, default=default,
        help="act as a signed-in person with this role: the store refuses what the role may "
        "not do, as on the pages" + (f" (default {default})" if default else
                                     " (default: single user, every action allowed)"))


def actor_of(name: str, role: str | None) -> Actor:
    """The acting identity: signed in as ``name`` with ``role``, or the single user."""
    name = name.strip()
    return Actor.signed_in(name, role) if role else Actor.single_user(name)
