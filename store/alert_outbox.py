"""The alerts' outbox over the ``alert`` table (``store.alert_tables``): what
``workbench.alerts.Deliverer`` drains, and how it is kept small.

- :class:`SqlOutbox` is ``workbench.alerts.delivery.Outbox``: the pending alerts of rules that
  are neither removed nor paused, addressed to the rule's webhook *now* (an edited address
  applies to what still waits), grouped by destination; a destination held back by its
  backoff (``alert_destination``) gives none. Delivered and given-up alerts lose their
  payload (the record keeps its summary).
- :func:`cap_outbox`: at most ``OUTBOX_CAP`` alerts of one rule wait; older ones are dropped
  unsent (``dropped``) and counted on the rule (``alert_rule.dropped``, shown on Review).
- :func:`prune_records`: at most ``KEEP_ALERTS`` alerts of one rule are kept; older records
  that no longer wait are deleted.
- :func:`deliverer`: the process's delivery threads for a database (started once).

All of it is bookkeeping that follows a guarded write (the traces' own); none of it is
guarded again.
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from store.alert_tables import (
    DELIVERED,
    DROPPED,
    FAILED,
    PENDING,
    AlertDestinationRow,
    AlertRow,
    AlertRuleRow,
)
from store.session import retry_conflicts, write_session
from workbench.alerts.delivery import PER_PASS, Deliverer, Pending, backoff_s, destination_key
from workbench.clock import utcnow

OUTBOX_CAP = 500  # alerts of one rule waiting to be posted; older ones are dropped unsent
KEEP_ALERTS = 2000  # alerts of one rule kept; older records that no longer wait are deleted
EXIT_WAIT_S = 5.0  # a batch command gives its alerts this long to go out before it exits


def _active_rules(session: Session) -> list[AlertRuleRow]:
    return list(session.exec(select(AlertRuleRow).where(
        col(AlertRuleRow.removed).is_(False), col(AlertRuleRow.paused).is_(False),
        AlertRuleRow.webhook != "")).all())


def _holds(session: Session) -> dict[str, datetime | None]:
    return {d.key: d.next_attempt_at for d in session.exec(select(AlertDestinationRow)).all()}


class SqlOutbox:
    """``workbench.alerts.Outbox`` over the ``alert`` table (see the module doc)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def due(self, now: datetime) -> list[Pending]:
        out: list[Pending] = []
        with Session(self.engine) as session:
            holds = _holds(session)
            for rule in _active_rules(session):
                dest = destination_key(rule.webhook)
                held = holds.get(dest)
                if held is not None and held > now:
                    continue
                rows = session.exec(select(AlertRow).where(AlertRow.rule_id == rule.id,
                                                           AlertRow.delivery == PENDING)
                                    .order_by(AlertRow.id).limit(PER_PASS)).all()
                out += [Pending(r.id, rule.webhook, json.loads(r.payload_json), r.attempts,
                                rule.auth_env, dest) for r in rows]
        return sorted(out, key=lambda p: p.id)

    def next_due(self, exclude: Sequence[str] = ()) -> datetime | None:
        now, soonest = utcnow(), None
        with Session(self.engine) as session:
            holds = _holds(session)
            for rule in _active_rules(session):
                dest = destination_key(rule.webhook)
                if dest in exclude or session.exec(select(AlertRow.id).where(
                        AlertRow.rule_id == rule.id, AlertRow.delivery == PENDING)
                        .limit(1)).first() is None:
                    continue
                at = max(now, holds.get(dest) or now)
                soonest = at if soonest is None else min(soonest, at)
        return soonest

    def delivered(self, alert_id: int, destination: str) -> None:
        def write() -> None:
            with write_session(self.engine) as session:
                session.exec(update(AlertRow).where(AlertRow.id == alert_id).values(
                    delivery=DELIVERED, delivered_at=utcnow(), attempts=AlertRow.attempts + 1,
                    payload_json="", last_error=""))
                session.exec(delete(AlertDestinationRow).where(AlertDestinationRow.key == destination))
                session.commit()
        retry_conflicts(write)

    def failed(self, alert_id: int, destination: str, error: str, give_up: bool) -> None:
        def write() -> None:
            with write_session(self.engine) as session:
                now = utcnow()
                dest = session.get(AlertDestinationRow, destination) or AlertDestinationRow(
                    key=destination)
                dest.failures += 1
                dest.next_attempt_at = now + timedelta(seconds=backoff_s(dest.failures))
                dest.last_error, dest.updated_at = error, now
                session.add(dest)
                values: dict[str, Any] = {"attempts": AlertRow.attempts + 1, "last_error": error,
                                          "next_attempt_at": dest.next_attempt_at}
                if give_up:
                    values.update(delivery=FAILED, payload_json="", next_attempt_at=None)
                session.exec(update(AlertRow).where(AlertRow.id == alert_id).values(**values))
                session.commit()
        retry_conflicts(write)


def pending_count(session: Session, rule_id: int) -> int:
    return int(session.exec(select(func.count()).select_from(AlertRow).where(
        AlertRow.rule_id == rule_id, AlertRow.delivery == PENDING)).one())


def cap_outbox(session: Session, rule: AlertRuleRow) -> int:
    """Drop the rule's oldest waiting alerts beyond ``OUTBOX_CAP`` (inside the caller's write
    session); returns how many were dropped (added to ``rule.dropped``)."""
    excess = pending_count(session, rule.id) - OUTBOX_CAP
    if excess <= 0:
        return 0
    ids = list(session.exec(select(AlertRow.id).where(AlertRow.rule_id == rule.id,
                                                      AlertRow.delivery == PENDING)
                            .order_by(AlertRow.id).limit(excess)).all())
    session.exec(update(AlertRow).where(col(AlertRow.id).in_(ids)).values(
        delivery=DROPPED, payload_json="", next_attempt_at=None,
        last_error=f"dropped unsent: more than {OUTBOX_CAP} alerts of this rule waited"))
    rule.dropped += len(ids)
    session.add(rule)
    return len(ids)


def prune_records(session: Session, rule_id: int) -> None:
    """Delete the rule's alert records older than its newest ``KEEP_ALERTS`` that no longer
    wait (inside the caller's write session)."""
    boundary = session.exec(select(AlertRow.id).where(AlertRow.rule_id == rule_id)
                            .order_by(col(AlertRow.id).desc()).offset(KEEP_ALERTS).limit(1)).first()
    if boundary is not None:
        session.exec(delete(AlertRow).where(AlertRow.rule_id == rule_id, AlertRow.id <= boundary,
                                            AlertRow.delivery != PENDING))


_DELIVERERS: dict[str, Deliverer] = {}
_LOCK = threading.Lock()


def deliverer(engine: Engine) -> Deliverer:
    """The process's delivery threads for ``engine``'s database (started once)."""
    key = str(engine.url)
    with _LOCK:
        if key not in _DELIVERERS:
            _DELIVERERS[key] = Deliverer(SqlOutbox(engine))
        return _DELIVERERS[key]


def stop_deliverers() -> None:
    """Stop every delivery thread of this process (tests, a server shutting down)."""
    with _LOCK:
        found = list(_DELIVERERS.values())
        _DELIVERERS.clear()
    for d in found:
        d.stop()


@atexit.register
def _flush_at_exit() -> None:
    for d in list(_DELIVERERS.values()):
        d.wait_idle(EXIT_WAIT_S)
