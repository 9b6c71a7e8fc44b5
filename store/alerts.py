"""Alert rules and the alerts they fired (``workbench.alerts``).

- ``alert_rule``: a saved rule (``workbench.alerts.rules.AlertRule``), who made it, whether it
  is silenced and until when, and for a share rule whether it stands above its level (so it
  fires on crossing, once);
- ``alert``: one fired alert, unique per (rule, key) so a case re-stored or a batch re-run
  fires it once; it is also the webhook's durable outbox (``delivery``: pending, delivered,
  failed, silenced, none) drained by ``workbench.alerts.Deliverer`` over :class:`SqlOutbox`,
  and acknowledged by a person (``ack_by``, ``ack_at``).

Writes a person makes take the acting ``roles.Actor``: adding a rule names a webhook that
verdicts are sent to ("change settings", admins); silencing a rule and acknowledging an
alert are part of reviewing verdicts ("decide reviews"). Checking rules
(:func:`check_audited`) and the outbox's bookkeeping follow a guarded write (the traces' own)
and are not guarded again.

Importing this module registers :func:`check_audited` with ``workbench.alerts.on_audited``
(``store.tables`` imports it, so every process with an engine checks rules).
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, UniqueConstraint, col, select

from store.core_tables import AuditResultRow
from store.session import retry_conflicts, write_session
from workbench.alerts.delivery import Deliverer, Pending
from workbench.alerts.hooks import on_audited
from workbench.alerts.rules import AlertRule, Fired, RuleKind, new_violations, share_fired
from workbench.audit.trace import AuditTrace
from workbench.clock import utcnow
from workbench.errors import WorkbenchError
from workbench.identity.roles import Actor, require

log = logging.getLogger(__name__)

PENDING, DELIVERED, FAILED, SILENCED, NO_WEBHOOK = "pending", "delivered", "failed", "silenced", "none"
EXIT_WAIT_S = 5.0  # a batch command gives its alerts this long to go out before it exits


class AlertRuleRow(SQLModel, table=True):
    __tablename__ = "alert_rule"
    __table_args__ = (UniqueConstraint("name"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str
    kind: str
    policy: str = ""
    probability: float = 0.5
    window: int = 50
    share: float = 0.2
    dataset: str = ""
    webhook: str = ""
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


class AlertError(WorkbenchError, LookupError):
    """No such rule or alert; the message names it."""


def _rule(row: AlertRuleRow) -> AlertRule:
    return AlertRule(row.name, RuleKind(row.kind), row.policy, row.probability, row.window,
                     row.share, row.dataset, row.webhook, row.id)


def add_rule(engine: Engine, rule: AlertRule, *, actor: Actor) -> int:
    """Save ``rule`` (checked); returns its id. ``NotAllowed`` unless ``actor`` may change
    settings; ``AlertError`` when the name is taken."""
    require(actor, "change settings")
    rule.check()
    row = AlertRuleRow(name=rule.name.strip(), kind=str(rule.kind), policy=rule.policy,
                       probability=rule.probability, window=rule.window, share=rule.share,
                       dataset=rule.dataset, webhook=rule.webhook, created_by=actor.name)
    try:
        with Session(engine) as session:
            session.add(row)
            session.commit()
            return int(row.id)
    except IntegrityError:
        raise AlertError(f"an alert rule named {rule.name!r} exists",
                         "choose another name (`workbench alerts list` shows them)") from None


def _rule_row(session: Session, name: str) -> AlertRuleRow:
    row = session.exec(select(AlertRuleRow).where(AlertRuleRow.name == name,
                                                  col(AlertRuleRow.removed).is_(False))).first()
    if row is None:
        raise AlertError(f"no alert rule named {name!r}", "`workbench alerts list` shows the rules")
    return row


def silence_rule(engine: Engine, name: str, minutes: float, *, actor: Actor) -> datetime | None:
    """Silence rule ``name`` for ``minutes`` (0: unsilence): alerts it fires meanwhile are
    recorded and shown, not posted. Returns the end of the silence."""
    require(actor, "decide reviews")
    until = utcnow() + timedelta(minutes=minutes) if minutes > 0 else None
    with write_session(engine) as session:
        row = _rule_row(session, name)
        row.silenced_until, row.silenced_by = until, actor.name if until else ""
        session.add(row)
        session.commit()
    return until


def acknowledge(engine: Engine, alert_ids: Sequence[int], *, actor: Actor) -> int:
    """Mark alerts acknowledged by ``actor``; returns how many were open. A delivery still
    pending goes on (acknowledging is seeing it, not cancelling what others are told)."""
    require(actor, "decide reviews")
    with write_session(engine) as session:
        result = session.exec(update(AlertRow).where(col(AlertRow.id).in_(list(alert_ids)),
                                                     col(AlertRow.ack_at).is_(None))
                              .values(ack_by=actor.name, ack_at=utcnow()))
        session.commit()
        return int(result.rowcount or 0)


def rules(engine: Engine) -> list[tuple[AlertRule, AlertRuleRow]]:
    with Session(engine) as session:
        rows = session.exec(select(AlertRuleRow).where(col(AlertRuleRow.removed).is_(False))
                            .order_by(AlertRuleRow.name)).all()
    return [(_rule(r), r) for r in rows]


def alerts(engine: Engine, *, open_only: bool = False, dataset: str | None = None,
           limit: int = 200) -> list[tuple[AlertRow, str]]:
    """Fired alerts, newest first, each with its rule's name."""
    stmt = select(AlertRow, AlertRuleRow.name).join(AlertRuleRow).order_by(col(AlertRow.id).desc())
    if open_only:
        stmt = stmt.where(col(AlertRow.ack_at).is_(None))
    if dataset is not None:
        stmt = stmt.where(AlertRow.dataset == dataset)
    with Session(engine) as session:
        return [(a, name) for a, name in session.exec(stmt.limit(limit)).all()]


# -- checking after an audit -------------------------------------------------------------------

def _recent(session: Session, dataset: str, window: int) -> list[AuditTrace]:
    """The dataset's newest traces, one per case, newest last (at most ``window`` cases)."""
    rows = session.exec(select(AuditResultRow.case_id, AuditResultRow.trace_json)
                        .where(AuditResultRow.dataset == dataset)
                        .order_by(col(AuditResultRow.id).desc()).limit(window * 4)).all()
    seen: dict[str, AuditTrace] = {}
    for case_id, text in rows:
        if case_id not in seen:
            seen[case_id] = AuditTrace.from_dict(json.loads(text))
        if len(seen) >= window:
            break
    return list(reversed(seen.values()))


def check_audited(engine: Engine, dataset: str, traces: Sequence[AuditTrace]) -> list[str]:
    """Check every rule against ``traces`` just stored in ``dataset``; record what fires
    (once per rule and key) in the outbox and wake the deliverer. Returns the new alerts'
    keys."""
    def write() -> list[str]:
        new: list[str] = []
        with write_session(engine) as session:
            now = utcnow()
            for row in session.exec(select(AlertRuleRow).where(
                    col(AlertRuleRow.removed).is_(False))).all():
                rule = _rule(row)
                if rule.kind == RuleKind.VIOLATION:
                    fired = new_violations(rule, traces, dataset)
                else:
                    one, row.above = share_fired(rule, _recent(session, dataset, rule.window),
                                                 dataset, row.above)
                    session.add(row)
                    fired = [one] if one else []
                silenced = row.silenced_until is not None and row.silenced_until > now
                for f in fired:
                    if _record(session, row, f, silenced, now) is not None:
                        new.append(f.key)
            session.commit()
        return new

    with Session(engine) as session:  # most databases have no rules: no write lock then
        if session.exec(select(AlertRuleRow.id).where(col(AlertRuleRow.removed).is_(False))
                        .limit(1)).first() is None:
            return []
    keys = retry_conflicts(write)
    if keys:
        deliverer(engine).wake()
    return keys


def _record(session: Session, row: AlertRuleRow, fired: Fired, silenced: bool,
            now: datetime) -> AlertRow | None:
    if session.exec(select(AlertRow.id).where(AlertRow.rule_id == row.id,
                                              AlertRow.key == fired.key)).first() is not None:
        return None
    delivery = SILENCED if silenced else PENDING if row.webhook else NO_WEBHOOK
    alert = AlertRow(rule_id=row.id, key=fired.key, dataset=fired.dataset, case_id=fired.case_id,
                     summary=fired.summary, payload_json=json.dumps(fired.payload), fired_at=now,
                     delivery=delivery, webhook=row.webhook, next_attempt_at=now)
    session.add(alert)
    session.flush()
    return alert


@on_audited
def _after_audit(traces: Sequence[AuditTrace], where: Any) -> None:
    """The hook: ``where`` is a store sink or the API's store (``engine`` and ``dataset``),
    or a tee of sinks (``sinks``: ``audit --out F --store D``)."""
    for sink in getattr(where, "sinks", None) or (where,):
        engine, dataset = getattr(sink, "engine", None), getattr(sink, "dataset", None)
        if isinstance(engine, Engine) and isinstance(dataset, str):
            check_audited(engine, dataset, traces)


# -- the outbox --------------------------------------------------------------------------------

class SqlOutbox:
    """``workbench.alerts.Outbox`` over the ``alert`` table."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def due(self, now: datetime) -> list[Pending]:
        with Session(self.engine) as session:
            rows = session.exec(select(AlertRow).where(AlertRow.delivery == PENDING,
                                                       col(AlertRow.next_attempt_at) <= now)
                                .order_by(AlertRow.id).limit(100)).all()
        return [Pending(r.id, r.webhook, json.loads(r.payload_json), r.attempts) for r in rows]

    def next_due(self) -> datetime | None:
        with Session(self.engine) as session:
            return session.exec(select(AlertRow.next_attempt_at).where(AlertRow.delivery == PENDING)
                                .order_by(AlertRow.next_attempt_at).limit(1)).first()

    def delivered(self, alert_id: int) -> None:
        self._set(alert_id, delivery=DELIVERED, delivered_at=utcnow(),
                  attempts=AlertRow.attempts + 1)

    def failed(self, alert_id: int, error: str, retry_at: datetime | None) -> None:
        self._set(alert_id, delivery=PENDING if retry_at else FAILED, last_error=error,
                  next_attempt_at=retry_at, attempts=AlertRow.attempts + 1)

    def _set(self, alert_id: int, **values: Any) -> None:
        with Session(self.engine) as session:
            session.exec(update(AlertRow).where(AlertRow.id == alert_id).values(**values))
            session.commit()


_DELIVERERS: dict[str, Deliverer] = {}
_LOCK = threading.Lock()


def deliverer(engine: Engine) -> Deliverer:
    """The process's delivery thread for ``engine``'s database (started once)."""
    key = str(engine.url)
    with _LOCK:
        if key not in _DELIVERERS:
            _DELIVERERS[key] = Deliverer(SqlOutbox(engine))
        return _DELIVERERS[key]


@atexit.register
def _flush_at_exit() -> None:
    for d in list(_DELIVERERS.values()):
        d.wait_idle(EXIT_WAIT_S)
