"""Who is annotating on the Annotate page: the sidebar identity (``components.identity``,
OIDC or the local sign-in), registered as an annotator, and the page's flash messages.

There is no second sign-in here: labels are recorded under the signed-in name. Roles that
may label (``workbench.identity.roles``: annotator, reviewer, admin) annotate; reviewers and admins
see every label and adjudicate, so they annotate as the annotation store's ``reviewer``.
"""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.safe import md
from store import annotation as store
from workbench.annotation.labels import Annotator, LabelError
from workbench.identity.roles import may

FLASH = "ann_flash"


def annotator_of(who: identity.Identity) -> Annotator:
    """The annotation store's view of a signed-in person (role ``reviewer`` or ``annotator``)."""
    return Annotator(who.name, "reviewer" if may(who.role, "adjudicate") else "annotator")


def signed_in(nothing: str = "saved") -> Annotator | None:
    """The annotator of this browser session, or ``None`` when nobody who may label is
    signed in, with an error flash saying nothing was ``nothing`` (button callbacks check
    it again: a shortcut key must not get past the role)."""
    who = identity.current()
    if who is None or not may(who.role, "label"):
        leave_flash("error", f"Sign in (sidebar) with a role that may label; nothing was {nothing}.")
        return None
    return annotator_of(who)


def require_annotator(eng: Engine) -> Annotator:
    """The signed-in annotator, registered in the store; otherwise say why and stop the page.

    Annotation is blind per person, so it needs a name even where the rest of the workbench
    runs in single-user mode."""
    who = identity.current()
    if who is None:
        st.info("Sign in (sidebar) as an annotator, reviewer or admin to annotate: labels are "
                "blind and recorded under your name.")
        st.stop()
    if not may(who.role, "label"):
        identity.explain_refusal("label")
        st.stop()
    annotator = annotator_of(who)
    try:
        store.add_annotator(eng, annotator.name, annotator.role)
    except LabelError as exc:  # the name labels under another role already
        st.error(md(f"{exc}."))
        st.stop()
    return annotator


def flash() -> None:
    """Show the message a callback left (escaped: it may quote user input)."""
    queue_nav.show_flash(FLASH)


def leave_flash(kind: str, text: str) -> None:
    queue_nav.leave_flash(FLASH, kind, text)


def signed_in_caption(who: Annotator) -> None:
    mode = "see every label and adjudicate" if who.is_reviewer else "label blind"
    st.caption(md(f"Annotating as {who.name}: you {mode}. Sign out or switch in the sidebar."))
