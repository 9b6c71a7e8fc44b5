"""Decision thresholds: the saved, versioned setting that turns a violation probability into
a decision, per dataset or per policy.

Each save is a new version of its scope (``dataset:NAME`` or ``policy:NAME``); the newest is
current, older ones stay for the audit trail and are never changed. A save names the version
it was made from (``base_version``, None for the first); a stale base raises
``StaleThreshold`` instead of silently replacing a newer choice. The value and the calibration
come from ``workbench.decision`` (chosen by grouped cross-validation).
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, UniqueConstraint, select

from store.session import retry_conflicts, write_session
from workbench.clock import utcnow
from workbench.decision import DecisionSetting
from workbench.errors import WorkbenchError
from workbench.identity.roles import Actor, require

SCOPE_KINDS = ("dataset", "policy")


class ThresholdRow(SQLModel, table=True):
    """One saved version of a decision threshold."""

    __tablename__ = "decision_threshold"
    __table_args__ = (UniqueConstraint("scope", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    scope: str = Field(index=True)  # "dataset:NAME" or "policy:NAME"
    version: int
    threshold: float
    setting_json: str  # the DecisionSetting as JSON (score, calibration, guarantee, how chosen)
    author: str = ""
    note: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class StaleThreshold(WorkbenchError, ValueError):
    """The threshold was saved by someone else since it was read."""


def scope_name(kind: str, name: str) -> str:
    if kind not in SCOPE_KINDS or not name:
        raise ValueError(f"a threshold scope is one of {SCOPE_KINDS} with a name, not {kind!r}")
    return f"{kind}:{name}"


def save_threshold(engine: Engine, scope: str, setting: DecisionSetting, *,
                   base_version: int | None, actor: Actor, note: str = "") -> int:
    """Save ``setting`` as the next version of ``scope``; returns that version. Raises
    ``StaleThreshold`` (nothing saved) when the newest version is not ``base_version``, and
    ``roles.NotAllowed`` when ``actor`` may not decide reviews."""
    require(actor, "decide reviews")

    def write() -> int:
        with write_session(engine) as session:
            newest = session.exec(select(ThresholdRow).where(ThresholdRow.scope == scope)
                                  .order_by(ThresholdRow.version.desc())).first()
            have = newest.version if newest is not None else None
            if have != base_version:
                raise StaleThreshold(
                    f"the threshold of {scope} is at version {have}, not {base_version}: someone "
                    "saved another since you loaded it",
                    "reload it, check the newer choice, then save again")
            version = (have or 0) + 1
            session.add(ThresholdRow(scope=scope, version=version, threshold=setting.threshold,
                                     setting_json=json.dumps(setting.to_dict(), sort_keys=True),
                                     author=actor.name, note=note))
            session.commit()
            return version

    return retry_conflicts(write)


def current_threshold(engine: Engine, scope: str) -> tuple[int, DecisionSetting] | None:
    """(version, setting) of the newest saved threshold of ``scope``, or None."""
    with Session(engine) as session:
        row = session.exec(select(ThresholdRow).where(ThresholdRow.scope == scope)
                           .order_by(ThresholdRow.version.desc())).first()
    if row is None:
        return None
    return row.version, DecisionSetting.from_dict(json.loads(row.setting_json))


def threshold_history(engine: Engine, scope: str) -> list[ThresholdRow]:
    with Session(engine) as session:
        return list(session.exec(select(ThresholdRow).where(ThresholdRow.scope == scope)
                                 .order_by(ThresholdRow.version)).all())
