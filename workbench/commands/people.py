"""``workbench people list|add|remove``: the roster the pages sign people in from.

The same identities and roles serve the pages (sign-in) and the command line (``--as``).
An empty roster keeps the workbench a one-person tool; the first person added must be an
admin, who then manages the roster (``--as`` them)."""

from __future__ import annotations

import argparse
import sys

from workbench.commands._common import action, add_actor_option, cli_actor, command_group


def register(sub: argparse._SubParsersAction) -> None:
    from workbench.identity.roles import ROLES

    people = command_group(sub, "people", dest="people_command",
                           help="who may sign in, with which role (the roster)")
    p = action(people, "list", _list, help="everyone on the roster, with role")
    p.add_argument("--db")

    p = action(people, "add", _add, help="put a person on the roster, or change their role "
                                         "or password (signs them out everywhere)")
    p.add_argument("name", help="sign-in name (the e-mail address, for OIDC)")
    p.add_argument("--role", required=True, choices=ROLES)
    p.add_argument("--password-env", metavar="VAR",
                   help="set the password to the value of this environment variable")
    p.add_argument("--no-password", action="store_true",
                   help="remove their password (an admin without one: only on a single-user "
                        "machine, where nobody else can type the name)")
    p.add_argument("--db")
    add_actor_option(p)

    p = action(people, "remove", _remove, help="take a person off the roster (signs them out)")
    p.add_argument("name")
    p.add_argument("--db")
    add_actor_option(p)


def _list(args) -> int:
    from store import people
    from store.db import make_engine

    found = people.people(make_engine(args.db))
    if not found:
        print("nobody: the roster is empty (single-user mode; `workbench people add NAME "
              "--role admin` starts one)")
    for person in found:
        print(f"{person.name}\t{person.role}\t{'password' if person.has_password else 'no password'}")
    return 0


def _add(args) -> int:
    import os

    from store import people
    from store.db import make_engine
    from workbench.commands._common import CliError

    password = None
    if args.no_password:
        password = ""
    elif args.password_env:
        password = os.environ.get(args.password_env)
        if not password:
            raise CliError(f"--password-env {args.password_env}: that variable is not set or "
                           "empty", f"export {args.password_env}=... first (a password on the "
                           "command line itself would stay in the shell history)")
    engine = make_engine(args.db)
    actor = cli_actor(args, engine)
    if args.role == "admin" and password is None:
        known = people.get_person(engine, args.name.strip())
        if known is None or not known.has_password:
            raise CliError(f"{args.name} would be an admin without a password: anyone who types "
                           "that name would sign in with every right; nothing was changed",
                           f"give one through a variable: export PW=...; workbench people add "
                           f"{args.name} --role admin --password-env PW (or --no-password, "
                           "only on a single-user machine)")
    person = people.save_person(engine, args.name, args.role, password, actor=actor)
    print(f"{person.name}: {person.role}, "
          f"{'with a password' if person.has_password else 'no password'}")
    if person.role == "admin" and not person.has_password:
        print(f"warning: {person.name} is an admin without a password; on a shared machine "
              f"set one: workbench people add {person.name} --role admin --password-env VAR",
              file=sys.stderr)
    return 0


def _remove(args) -> int:
    from store import people
    from store.db import make_engine

    engine = make_engine(args.db)
    people.remove_person(engine, args.name, actor=cli_actor(args, engine))
    print(f"{args.name}: removed from the roster and signed out")
    return 0
