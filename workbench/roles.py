"""Who may do what: the workbench's roles and the actions each allows.

Roles (issue #16): authors edit policy graphs; analysts and reviewers decide Review verdicts;
annotators label (blind); reviewers adjudicate labels; admins do everything, including
changing settings. Pages ask :func:`may` before an action and show :func:`refusal` instead.

Usage::

    from workbench.roles import may, refusal
    may("annotator", "edit graphs")          # False
    refusal("annotator", "edit graphs")      # 'Signed in as annotator: ... needs author or admin.'
"""

from __future__ import annotations

from workbench.errors import WorkbenchError

ROLES = ("author", "analyst", "annotator", "reviewer", "admin")

PERMISSIONS: dict[str, frozenset[str]] = {
    "edit graphs": frozenset({"author", "admin"}),
    "decide reviews": frozenset({"reviewer", "analyst", "admin"}),
    "label": frozenset({"annotator", "reviewer", "admin"}),
    "adjudicate": frozenset({"reviewer", "admin"}),
    "see all labels": frozenset({"reviewer", "admin"}),  # annotators see only their own
    "change settings": frozenset({"admin"}),
}


class RoleError(WorkbenchError, ValueError):
    """An unknown role or action (a programming or configuration error, not a refusal)."""


def may(role: str, action: str) -> bool:
    """Whether ``role`` allows ``action`` (one of :data:`PERMISSIONS`)."""
    if action not in PERMISSIONS:
        raise RoleError(f"unknown action {action!r}; use one of {', '.join(PERMISSIONS)}")
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    return role in PERMISSIONS[action]


def refusal(role: str, action: str) -> str:
    """What to tell a user whose ``role`` does not allow ``action``."""
    allowed = [r for r in ROLES if r in PERMISSIONS[action]]
    return (f"Signed in as {role}: to {action} you need the role "
            f"{' or '.join(allowed)}. Sign in with that role (sidebar) or ask an admin.")
