"""The store's side of signing in (``store.people``), bound to the app's engine for
``components.identity`` (which draws and keeps the session but does not import the store)."""

from __future__ import annotations

from components.identity import Backend
from pages._state import engine
from store import people


def admins_without_password() -> list[str]:
    """The roster's admins whom the name alone signs in (the sidebar and Settings warn)."""
    return people.passwordless_admins(engine())


def backend() -> Backend:
    eng = engine()

    def role_of(name: str) -> str | None:
        person = people.get_person(eng, name) if name else None
        return None if person is None else person.role

    return Backend(
        roster_configured=lambda: people.roster_configured(eng),
        role_of=role_of,
        sign_in=lambda name, role, password: people.sign_in(eng, name, role, password),
        resolve=lambda token: people.resolve(eng, token),
        sign_out=lambda token: people.sign_out(eng, token),
        admins_without_password=admins_without_password,
    )
