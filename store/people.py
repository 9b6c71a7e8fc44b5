"""Who may use the workbench, and who is signed in: the roster, sign-in sessions, the secret.

- ``PersonRow``: the roster (``workbench people add NAME --role ROLE``). Once it holds anyone,
  roles are *configured*: the pages sign in only people on it, with the role it gives them
  (not one they pick), an optional password; nobody signed in is a viewer (reads, changes
  nothing); and the command line acts as the person ``--as`` names. With an empty roster the
  workbench stays a one-person tool: anyone signs in with the role they pick, and nobody
  signed in (or a command line without ``--as``) is single-user mode.
- ``SignInRow``: one row per sign-in, so that signing out revokes its token everywhere (every
  tab, a pasted link); a token (``workbench.identity.sign_in``) names its row by ``sid``.
- ``SecretRow``: the session secret the tokens are signed with, made once and kept here so
  every UI process on a shared database accepts the same tokens (``WORKBENCH_SESSION_SECRET``
  overrides it).

Every check that a write is allowed still happens at the write (``workbench.identity.roles.require``):
this module only says who is acting.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, select

from store.core_tables import utcnow
from store.session import retry_conflicts, write_session
from workbench.identity.roles import COMMAND_LINE, ROLES, Actor, NotAllowed, require
from workbench.identity.sign_in import (
    Claims,
    InvalidToken,
    SignInError,
    check_password,
    expiry,
    hash_password,
    issue_token,
    new_sid,
    read_token,
    session_hours,
)
from workbench.settings import SESSION_SECRET


class PersonRow(SQLModel, table=True):
    __tablename__ = "workbench_person"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    role: str
    password_hash: str = ""  # "" = no password: the name alone signs in
    created_at: datetime = Field(default_factory=utcnow)
    created_by: str = ""


class SignInRow(SQLModel, table=True):
    __tablename__ = "sign_in_session"

    id: int | None = Field(default=None, primary_key=True)
    sid: str = Field(unique=True)
    name: str
    role: str
    issued_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: datetime | None = None


class SecretRow(SQLModel, table=True):
    __tablename__ = "workbench_secret"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    value: str


@dataclass(frozen=True)
class Person:
    name: str
    role: str
    has_password: bool


@dataclass(frozen=True)
class SignedIn:
    """A live sign-in: ``token`` is what the browser keeps."""

    token: str
    name: str
    role: str
    expires: datetime


# -- the roster ------------------------------------------------------------------------------

def roster_configured(engine: Engine) -> bool:
    """Whether anyone is on the roster (then roles are configured: see the module docstring)."""
    with Session(engine) as session:
        return session.exec(select(PersonRow.id).limit(1)).first() is not None


def people(engine: Engine) -> list[Person]:
    with Session(engine) as session:
        rows = session.exec(select(PersonRow).order_by(PersonRow.name)).all()
    return [Person(r.name, r.role, bool(r.password_hash)) for r in rows]


def get_person(engine: Engine, name: str) -> Person | None:
    with Session(engine) as session:
        row = session.exec(select(PersonRow).where(PersonRow.name == name)).first()
    return None if row is None else Person(row.name, row.role, bool(row.password_hash))


def passwordless_admins(engine: Engine) -> list[str]:
    """Names of the admins who sign in without a password (``workbench people add NAME --role
    admin --no-password``, meant for a single-user machine): on a shared one anyone who
    types such a name has every right, so the sidebar and Settings can warn."""
    with Session(engine) as session:
        return list(session.exec(select(PersonRow.name).where(
            PersonRow.role == "admin", PersonRow.password_hash == "").order_by(PersonRow.name)))


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise SignInError(f"unknown role {role!r}", f"use one of {', '.join(ROLES)}")


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200 or any(ord(c) < 32 for c in name):
        raise SignInError(f"{name!r} cannot be a person's name",
                          "use 1 to 200 printable characters (an e-mail address for OIDC)")
    return name


def save_person(engine: Engine, name: str, role: str, password: str | None = None, *,
                actor: Actor) -> Person:
    """Put ``name`` on the roster with ``role`` (or change the role of someone on it), and set
    their password when one is given (``""`` removes it). ``actor`` must "manage people"; the
    first person of an empty roster may be added by the single user (that is how a roster
    starts), and must then be an admin, or nobody could manage it after; for the same reason
    the last admin cannot be given another role (nor removed: :func:`remove_person`)."""
    name = _check_name(name)
    _check_role(role)
    hashed = None if password is None else (hash_password(password) if password else "")

    def write() -> Person:
        with write_session(engine) as session:
            empty = session.exec(select(PersonRow.id).limit(1)).first() is None
            if empty and role != "admin":
                raise SignInError(f"the first person on the roster must be an admin, not {role}",
                                  f"add an admin first: workbench people add NAME --role admin; "
                                  f"then {name}")
            require(actor, "manage people")
            row = session.exec(select(PersonRow).where(PersonRow.name == name)).first()
            if row is not None and row.role == "admin" and role != "admin" and not session.exec(
                    select(PersonRow.id).where(PersonRow.role == "admin",
                                               PersonRow.name != name).limit(1)).first():
                raise SignInError(f"{name} is the last admin; as {role} nobody could manage the "
                                  "roster; nothing was changed",
                                  f"make someone else an admin first (workbench people add NAME "
                                  f"--role admin --as {name}), then change {name}'s role")
            if row is None:
                row = PersonRow(name=name, role=role, created_by=actor.name)
            row.role = role
            if hashed is not None:
                row.password_hash = hashed
            session.add(row)
            _revoke_where(session, name)  # a changed role or password: sign in again
            session.commit()
            return Person(row.name, row.role, bool(row.password_hash))

    return retry_conflicts(write)


def remove_person(engine: Engine, name: str, *, actor: Actor) -> None:
    """Take ``name`` off the roster and sign them out everywhere. The last admin stays
    while anyone else is on it (nobody could manage the roster)."""
    require(actor, "manage people")

    def write() -> None:
        with write_session(engine) as session:
            row = session.exec(select(PersonRow).where(PersonRow.name == name)).first()
            if row is None:
                known = ", ".join(r.name for r in session.exec(select(PersonRow))) or "(nobody)"
                raise SignInError(f"{name!r} is not on the roster", f"on it: {known}")
            others = session.exec(select(PersonRow).where(PersonRow.name != name)).all()
            if row.role == "admin" and others and not any(o.role == "admin" for o in others):
                raise SignInError(f"{name} is the last admin; nobody could manage the roster",
                                  "make someone else an admin first")
            session.delete(row)
            _revoke_where(session, name)
            session.commit()

    retry_conflicts(write)


# -- sign-in sessions ------------------------------------------------------------------------

_secrets: dict[str, bytes] = {}


def session_secret(engine: Engine) -> bytes:
    """The key tokens are signed with: ``WORKBENCH_SESSION_SECRET``, else the store's (made
    on first use, under the write lock so concurrent processes agree on one)."""
    given = SESSION_SECRET.read(default="")
    if given:
        if len(given) < 32:
            raise SignInError(f"{SESSION_SECRET.name} is {len(given)} characters; a secret needs at least 32",
                              "set it to e.g. the output of: python -c 'import secrets; "
                              "print(secrets.token_urlsafe(48))', or unset it")
        return given.encode("utf-8")
    key = str(engine.url)
    if key not in _secrets:
        def write() -> str:
            with write_session(engine) as session:
                row = session.exec(select(SecretRow).where(SecretRow.name == "session")).first()
                if row is None:
                    row = SecretRow(name="session", value=secrets.token_urlsafe(48))
                    session.add(row)
                    session.commit()
                return row.value

        try:
            _secrets[key] = retry_conflicts(write).encode("utf-8")
        except IntegrityError:  # another process made it between our read and insert
            _secrets[key] = retry_conflicts(write).encode("utf-8")
    return _secrets[key]


def sign_in(engine: Engine, name: str, role: str = "analyst", password: str = "",
            now: datetime | None = None) -> SignedIn:
    """Sign ``name`` in and return the live sign-in with its token. With a roster, ``name``
    must be on it (its password given when it has one) and the roster's role is taken;
    ``role`` is used only when the roster is empty. Raises :class:`SignInError` (nothing
    signed in) otherwise."""
    name = _check_name(name)
    now = now or utcnow()
    with Session(engine) as session:
        listed = session.exec(select(PersonRow).limit(1)).first() is not None
        row = session.exec(select(PersonRow).where(PersonRow.name == name)).first()
    if listed:
        # One message for an unknown name and a wrong password: which names exist is not told.
        refused = SignInError("that name and password do not sign anyone in; nothing was "
                              "signed in", "check both, or ask an admin to add you: "
                              "workbench people add NAME --role ROLE")
        if row is None:
            raise refused
        if row.password_hash and not check_password(password, row.password_hash):
            raise refused
        role = row.role
    else:
        _check_role(role)
    claims = Claims(new_sid(), name, role, expiry(now, session_hours()))
    with Session(engine) as session:
        session.add(SignInRow(sid=claims.sid, name=name, role=role, issued_at=now,
                              expires_at=claims.expires))
        session.commit()
    return SignedIn(issue_token(session_secret(engine), claims), name, role, claims.expires)


def resolve(engine: Engine, token: str, now: datetime | None = None) -> SignedIn:
    """The live sign-in a token belongs to; raises :class:`InvalidToken` saying why not
    (altered, expired, signed out, no longer on the roster)."""
    now = now or utcnow()
    claims = read_token(session_secret(engine), token, now)
    with Session(engine) as session:
        row = session.exec(select(SignInRow).where(SignInRow.sid == claims.sid)).first()
        listed = session.exec(select(PersonRow).limit(1)).first() is not None
        person = session.exec(select(PersonRow).where(PersonRow.name == claims.name)).first()
    if row is None or row.revoked_at is not None:
        raise InvalidToken("you were signed out (here or in another tab)", "sign in again")
    role = claims.role
    if listed:
        if person is None:
            raise InvalidToken(f"{claims.name} is no longer on this workbench's roster",
                               "ask an admin to add you again")
        role = person.role
    return SignedIn(token, claims.name, role, claims.expires)


def sign_out(engine: Engine, token: str) -> bool:
    """Revoke the sign-in of ``token`` (every tab holding it is signed out); False when the
    token names no live sign-in. A token whose signature fails revokes nothing."""
    try:
        claims = read_token(session_secret(engine), token, utcnow())
    except InvalidToken:
        return False
    with Session(engine) as session:
        row = session.exec(select(SignInRow).where(SignInRow.sid == claims.sid)).first()
        if row is None or row.revoked_at is not None:
            return False
        row.revoked_at = utcnow()
        session.add(row)
        session.commit()
    return True


def _revoke_where(session: Session, name: str) -> None:
    for row in session.exec(select(SignInRow).where(SignInRow.name == name,
                                                    SignInRow.revoked_at == None)):  # noqa: E711
        row.revoked_at = utcnow()
        session.add(row)


# -- the command line ------------------------------------------------------------------------

def command_line_actor(engine: Engine, name: str | None) -> Actor:
    """Who a command acts as. With a roster: the person ``name`` (``--as`` or
    ``WORKBENCH_USER``) with the roster's role; without a name, nobody (every guarded write
    is refused and says to pass ``--as``). With an empty roster: the single user, recorded
    under ``name`` when given. The command line trusts the name (whoever runs it reaches the
    database anyway): the roster makes scripts record who acted and stop a mistaken role."""
    with Session(engine) as session:
        roster = {row.name: row.role for row in session.exec(select(PersonRow))}
    return roster_actor(roster, name)


def roster_actor(roster: Mapping[str, str], name: str | None) -> Actor:
    """:func:`command_line_actor` for a roster already read (name -> role), e.g. by
    ``store.db.roster_as_stored`` from a database not yet upgraded."""
    if not roster:
        return Actor.single_user(name) if name else COMMAND_LINE
    if not name:
        return Actor("", None)
    role = roster.get(name)
    if role is None:
        raise NotAllowed(f"{name!r} is not on this workbench's roster; nothing was done",
                         "pass --as with a name from `workbench people list`, or ask an admin "
                         "to add you")
    return Actor.signed_in(name, role)
