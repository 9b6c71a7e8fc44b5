"""Each analyst's saved views of the Review queue: a name and the view's URL parameters
(``workbench.review.views.ReviewView.to_params``), one per owner and name. Unlike decisions,
a view is a convenience, not a record: saving a name again replaces it, and it may be
deleted (no decision is lost with it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, UniqueConstraint, select

from store.session import retry_conflicts, write_session
from workbench.clock import utcnow
from workbench.review.decisions import ReviewError


class ReviewViewRow(SQLModel, table=True):
    """A named view of the Review queue (``workbench.review.views.ReviewView.to_params``),
    one per owner and name; saving a name again replaces its filters."""

    __tablename__ = "review_view"
    __table_args__ = (UniqueConstraint("owner", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    owner: str = Field(index=True)
    name: str
    params_json: str = "{}"
    updated_at: datetime = Field(default_factory=utcnow)


MAX_VIEW_NAME = 80


def save_view(engine: Engine, owner: str, name: str, params: Mapping[str, str]) -> None:
    """Store ``params`` as ``owner``'s view ``name`` (replacing one of the same name).
    Raises ``ReviewError`` for an empty owner or name."""
    owner, name = owner.strip(), name.strip()
    if not owner:
        raise ReviewError("a saved view belongs to someone; enter your name (or sign in) first")
    if not name or len(name) > MAX_VIEW_NAME:
        raise ReviewError(f"name the view (1 to {MAX_VIEW_NAME} characters)")
    text = json.dumps({str(k): str(v) for k, v in params.items()}, sort_keys=True)

    def write() -> None:
        with write_session(engine) as session:
            row = session.exec(select(ReviewViewRow).where(ReviewViewRow.owner == owner,
                                                           ReviewViewRow.name == name)).first()
            if row is None:
                row = ReviewViewRow(owner=owner, name=name)
            row.params_json, row.updated_at = text, utcnow()
            session.add(row)
            session.commit()

    retry_conflicts(write)


def views_for(engine: Engine, owner: str) -> dict[str, dict[str, str]]:
    """``owner``'s saved views, by name (alphabetical)."""
    with Session(engine) as session:
        rows = session.exec(select(ReviewViewRow).where(ReviewViewRow.owner == owner.strip())
                            .order_by(ReviewViewRow.name)).all()
    return {r.name: json.loads(r.params_json) for r in rows}


def delete_view(engine: Engine, owner: str, name: str) -> bool:
    """Remove ``owner``'s view ``name``; ``False`` when there was none."""
    with write_session(engine) as session:
        row = session.exec(select(ReviewViewRow).where(ReviewViewRow.owner == owner.strip(),
                                                       ReviewViewRow.name == name)).first()
        if row is None:
            return False
        session.delete(row)
        session.commit()
        return True
