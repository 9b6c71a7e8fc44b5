"""Who may do what: the workbench's roles and the actions each allows.

Roles (issue #16): authors edit policy graphs; analysts and reviewers decide Review verdicts;
annotators label (blind); reviewers adjudicate labels; admins do everything, including
changing settings and the roster of people; viewers read and change nothing (the least
privilege: what a person not on a configured roster gets). Pages ask :func:`may` before an
action and show :func:`refusal` instead.

The writes themselves check too, so a page that forgets cannot get past the role: every
store function that saves what a role guards (deleting or saving a SKILL version, deciding a
proposed edge, storing audit results, importing cases), and the one writer of workbench.toml
(``workbench.llm.config_file.save_role_settings``), takes the acting :class:`Actor` and
calls :func:`require`, which raises :class:`NotAllowed` naming the role needed.

Usage::

    from workbench.identity.roles import may, refusal
    may("annotator", "edit graphs")          # False
    refusal("annotator", "edit graphs")      # 'Signed in as annotator: ... needs author or admin.'
    require(Actor.signed_in("ann", "annotator"), "edit graphs")   # raises NotAllowed
    require(Actor.single_user("me"), "edit graphs")               # passes: nobody to keep out
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import WorkbenchError

ROLES = ("author", "analyst", "annotator", "reviewer", "admin", "viewer")

PERMISSIONS: dict[str, frozenset[str]] = {
    "edit graphs": frozenset({"author", "admin"}),
    "decide reviews": frozenset({"reviewer", "analyst", "admin"}),
    "label": frozenset({"annotator", "reviewer", "admin"}),
    "adjudicate": frozenset({"reviewer", "admin"}),
    "see all labels": frozenset({"reviewer", "admin"}),  # annotators see only their own
    "change settings": frozenset({"admin"}),
    # A stored trace is a verdict others read (Replay, Review, Evaluate): running audits is
    # the work of analysts, reviewers and authors checking an edit's impact; annotators label
    # blind and must not write verdicts.
    "store audit results": frozenset({"author", "analyst", "reviewer", "admin"}),
    # Storing a case again under its id replaces it, gold label included: the analysts who
    # assemble datasets and the reviewers who own the gold labels, not authors or annotators.
    "import cases": frozenset({"analyst", "reviewer", "admin"}),
    # Who is on the roster (store.people) and with which role decides every other action.
    "manage people": frozenset({"admin"}),
}

# Not a role anyone signs in with: the workbench run by one person without sign-in (the
# pages with nobody signed in and no OIDC configured, and the command line, whose user owns
# the database file anyway). Every action is allowed, as before roles existed.
SINGLE_USER = "single user"


class RoleError(WorkbenchError, ValueError):
    """An unknown role or action (a programming or configuration error, not a refusal)."""


class NotAllowed(WorkbenchError, PermissionError):
    """A write refused because the acting role does not allow it (nothing was written)."""


@dataclass(frozen=True)
class Actor:
    """Who performs a write: ``name`` goes into the record (edit history, decision), ``role``
    decides whether it is allowed. ``role`` is one of :data:`ROLES`, :data:`SINGLE_USER`, or
    ``None`` when sign-in is required and nobody is signed in."""

    name: str
    role: str | None

    @classmethod
    def signed_in(cls, name: str, role: str) -> Actor:
        if role not in ROLES:
            raise RoleError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
        return cls(name, role)

    @classmethod
    def single_user(cls, name: str = "analyst") -> Actor:
        return cls(name or "analyst", SINGLE_USER)

    @classmethod
    def nobody(cls) -> Actor:
        return cls("", None)


# The command line: whoever runs it owns the database file, so a role check protects nothing.
COMMAND_LINE = Actor("command line", SINGLE_USER)


def may(role: str, action: str) -> bool:
    """Whether ``role`` allows ``action`` (one of :data:`PERMISSIONS`)."""
    if action not in PERMISSIONS:
        raise RoleError(f"unknown action {action!r}; use one of {', '.join(PERMISSIONS)}")
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    return role in PERMISSIONS[action]


def refusal(role: str, action: str) -> str:
    """What to tell a user whose ``role`` does not allow ``action``."""
    return (f"Signed in as {role}: to {action} you need the role "
            f"{_who_may(action)}. Sign in with that role (sidebar) or ask an admin.")


def require(actor: Actor, action: str) -> None:
    """Refuse ``action`` unless ``actor`` may do it: raises :class:`NotAllowed` (message: who
    and what was refused; hint: the roles that may). Single-user mode allows everything."""
    if action not in PERMISSIONS:
        raise RoleError(f"unknown action {action!r}; use one of {', '.join(PERMISSIONS)}")
    if actor.role == SINGLE_USER:
        return
    if actor.role is None:
        raise NotAllowed(f"nobody is signed in: cannot {action}; nothing was saved",
                         f"sign in (sidebar; `--as NAME` on the command line) with the role "
                         f"{_who_may(action)}")
    if not may(actor.role, action):
        raise NotAllowed(f"{actor.name or 'someone'} is signed in as {actor.role}, which may not "
                         f"{action}; nothing was saved",
                         f"to {action} you need the role {_who_may(action)}: sign in with that "
                         "role (sidebar; `--as NAME` on the command line) or ask an admin")


def _who_may(action: str) -> str:
    return " or ".join(r for r in ROLES if r in PERMISSIONS[action])
