"""The tables of alerts (``store.alerts`` writes them, ``store.alert_outbox`` delivers from
them):

- ``alert_rule``: a saved rule (``workbench.alerts.rules.AlertRule``), who made it, whether
  it is silenced (until when) or paused, the variable holding its webhook's credential
  (``auth_env``; the secret is never stored), how many of its alerts were dropped unsent from
  a full outbox, and for a share rule whether it stands above its level (so it fires on
  crossing, once);
- ``alert``: one fired alert, unique per (rule, key) so a case re-stored or a batch re-run
  fires it once. Its ``delivery`` says where it stands: ``pending`` rows are the webhook's
  outbox (with the payload to post); ``delivered``, ``failed`` (given up), ``dropped`` (the
  outbox was full), ``cancelled`` (its rule was removed), ``silenced`` and ``none`` (no
  webhook) are records whose payload is pruned. A person acknowledges it (``ack_by``,
  ``ack_at``);
- ``alert_destination``: one receiver (``scheme://host:port``), its consecutive failed posts
  and when it may next be tried (retries back off per destination).
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel, UniqueConstraint

from workbench.clock import utcnow

PENDING, DELIVERED, FAILED, SILENCED, NO_WEBHOOK = "pending", "delivered", "failed", "silenced", "none"
DROPPED, CANCELLED = "dropped", "cancelled"


class AlertRuleRow(SQLModel, table=True):
    __tablename__ = "alert_rule"
    __table_args__ = (UniqueConstraint("name"),)

    id: int | None = Field(default=None, primary_key=True)
    # The rule's fields, always written from a checked ``AlertRule`` (``store.alerts.add_rule``):
    # no defaults here, so the rule's defaults have one home.
    name: str
    kind: str
    policy: str
    probability: float
    window: int
    share: float
    dataset: str
    webhook: str
    created_by: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    silenced_until: datetime | None = None
    silenced_by: str = ""
    above: bool = False  # a share rule: its share stood above the level at the last check
    removed: bool = False
    # The environment variable (or .streamlit/secrets.toml key) holding the webhook's
    # Authorization value; the secret itself is never stored.
    auth_env: str = ""
    paused: bool = False  # checks nothing and posts nothing until resumed
    paused_by: str = ""
    dropped: int = 0  # alerts dropped unsent because the rule's outbox was full


class AlertRow(SQLModel, table=True):
    __tablename__ = "alert"
    __table_args__ = (UniqueConstraint("rule_id", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    rule_id: int = Field(foreign_key="alert_rule.id", index=True)
    key: str
    dataset: str = Field(index=True)
    case_id: str = ""
    summary: str
    payload_json: str
    fired_at: datetime = Field(default_factory=utcnow)
    delivery: str = Field(default=PENDING, index=True)
    webhook: str = ""
    attempts: int = 0
    next_attempt_at: datetime | None = None
    last_error: str = ""
    delivered_at: datetime | None = None
    ack_by: str = ""
    ack_at: datetime | None = None


class AlertDestinationRow(SQLModel, table=True):
    """One receiver (``scheme://host:port``): consecutive failed posts and when the next may
    be tried, so a failing receiver is retried with backoff once per destination, not once
    per alert."""

    __tablename__ = "alert_destination"

    key: str = Field(primary_key=True)
    failures: int = 0
    next_attempt_at: datetime | None = None
    last_error: str = ""
    updated_at: datetime = Field(default_factory=utcnow)
