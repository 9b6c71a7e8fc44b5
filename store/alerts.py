"""Alert rules and the alerts they fired (``workbench.alerts``); the tables are
``store.alert_tables``, the webhook outbox ``store.alert_outbox``.

Writes a person makes take the acting ``roles.Actor`` and are checked here, at the write:
adding, editing, pausing and removing a rule decide where verdicts are sent ("change
settings", admins); silencing a rule for a while and acknowledging an alert are part of
reviewing verdicts ("decide reviews"). A webhook is checked when it is saved
(``workbench.alerts.destinations``: http(s), no credential in it, no internal address unless
an admin allowed the host) and again at each post; its credential is named, never stored
(``auth_env``: an environment variable or ``.streamlit/secrets.toml`` key). Checking rules
(:func:`check_audited`) and the outbox's bookkeeping follow a guarded write (the traces'
own) and are not guarded again.

Importing this module registers :func:`check_audited` with ``workbench.alerts.on_audited``
(``store.tables`` imports it, so every process with an engine checks rules).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from store.alert_outbox import (
    EXIT_WAIT_S,
    KEEP_ALERTS,
    OUTBOX_CAP,
    SqlOutbox,
    cap_outbox,
    deliverer,
    prune_records,
    stop_deliverers,
)
from store.alert_tables import (
    CANCELLED,
    DELIVERED,
    DROPPED,
    FAILED,
    NO_WEBHOOK,
    PENDING,
    SILENCED,
    AlertDestinationRow,
    AlertRow,
    AlertRuleRow,
)
from store.core_tables import AuditResultRow
from store.session import retry_conflicts, write_session
from workbench.alerts.destinations import check_destination
from workbench.alerts.hooks import on_audited
from workbench.alerts.rules import AlertRule, Fired, RuleKind, new_violations, share_fired
from workbench.audit.trace import AuditTrace
from workbench.clock import utcnow
from workbench.errors import WorkbenchError
from workbench.identity.roles import Actor, require

__all__ = [
    "CANCELLED", "DELIVERED", "DROPPED", "EXIT_WAIT_S", "FAILED", "KEEP_ALERTS", "NO_WEBHOOK",
    "OUTBOX_CAP", "PENDING", "SILENCED", "AlertDestinationRow", "AlertError", "AlertRow",
    "AlertRuleRow", "SqlOutbox", "acknowledge", "add_rule", "alerts", "check_audited",
    "deliverer", "edit_rule", "pause_rule", "remove_rule", "rules", "silence_rule",
    "stop_deliverers",
]

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# What `alerts edit` may change: the rule's own settings, its webhook and credential name.
EDITABLE = ("policy", "probability", "window", "share", "dataset", "webhook", "auth_env")


class AlertError(WorkbenchError, LookupError):
    """No such rule or alert; the message names it."""


def _rule(row: AlertRuleRow) -> AlertRule:
    return AlertRule(row.name, RuleKind(row.kind), row.policy, row.probability, row.window,
                     row.share, row.dataset, row.webhook, row.id)


def checked_rule(rule: AlertRule, auth_env: str = "") -> AlertRule:
    """``rule`` when it may be saved: its values (``AlertRule.check``), its webhook's
    destination (resolved and checked now) and the name of its credential variable."""
    rule.check()
    if rule.webhook:
        check_destination(rule.webhook, "webhook")
    if auth_env and not _ENV_NAME.fullmatch(auth_env):
        raise AlertError(f"--auth-env {auth_env[:60]!r} is not a variable name",
                         "name the environment variable (or secrets.toml key) holding the "
                         "webhook's credential, e.g. ALERTS_HOOK_TOKEN")
    if auth_env and not rule.webhook:
        raise AlertError("a credential variable without a webhook has nowhere to go",
                         "give --webhook too, or leave --auth-env out")
    return rule


def add_rule(engine: Engine, rule: AlertRule, *, actor: Actor, auth_env: str = "") -> int:
    """Save ``rule`` (checked: :func:`checked_rule`); returns its id. ``NotAllowed`` unless
    ``actor`` may change settings; ``AlertError`` when the name is taken;
    ``DestinationRefused`` for a webhook that may not be posted to. ``auth_env``: the
    environment variable (or secrets.toml key) holding the webhook's Authorization value."""
    require(actor, "change settings")
    checked_rule(rule, auth_env)
    row = AlertRuleRow(name=rule.name.strip(), kind=str(rule.kind), policy=rule.policy,
                       probability=rule.probability, window=rule.window, share=rule.share,
                       dataset=rule.dataset, webhook=rule.webhook, created_by=actor.name,
                       auth_env=auth_env)
    try:
        with Session(engine) as session:
            session.add(row)
            session.commit()
            return int(row.id)
    except IntegrityError:
        raise AlertError(f"an alert rule named {rule.name!r} exists",
                         "choose another name (`workbench alerts list` shows them)") from None


def edit_rule(engine: Engine, name: str, changes: Mapping[str, Any], *, actor: Actor) -> AlertRule:
    """Change the settings of rule ``name`` (keys of :data:`EDITABLE`; None values are left
    as they are), checked as a new rule is; returns the rule as saved. Alerts still waiting
    go to the new webhook. ``NotAllowed`` unless ``actor`` may change settings."""
    require(actor, "change settings")
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise AlertError(f"cannot edit {', '.join(unknown)} of a rule",
                         f"editable: {', '.join(EDITABLE)}; remove and add it to change more")
    given = {k: v for k, v in changes.items() if v is not None}
    with write_session(engine) as session:
        row = _rule_row(session, name)
        for key, value in given.items():
            setattr(row, key, value)
        checked_rule(_rule(row), row.auth_env)
        if "webhook" in given and row.webhook == "":
            row.auth_env = ""
        session.add(row)
        session.commit()
        return _rule(row)


def pause_rule(engine: Engine, name: str, paused: bool = True, *, actor: Actor) -> bool:
    """Pause rule ``name`` (``paused`` False: resume it). A paused rule fires nothing and its
    waiting alerts are not posted until it is resumed. Returns whether it was changed.
    ``NotAllowed`` unless ``actor`` may change settings."""
    require(actor, "change settings")
    with write_session(engine) as session:
        row = _rule_row(session, name)
        changed = row.paused != paused
        row.paused, row.paused_by = paused, actor.name if paused else ""
        session.add(row)
        session.commit()
    return changed


def remove_rule(engine: Engine, name: str, *, actor: Actor) -> int:
    """Remove rule ``name``: it fires no more, its alerts still waiting are cancelled (not
    posted), and its name is free again; its past alerts stay listed. Returns how many
    waiting alerts were cancelled. ``NotAllowed`` unless ``actor`` may change settings."""
    require(actor, "change settings")
    with write_session(engine) as session:
        row = _rule_row(session, name)
        row.removed = True
        row.name = f"{row.name} (removed #{row.id})"  # the name may be used again
        session.add(row)
        result = session.exec(update(AlertRow).where(AlertRow.rule_id == row.id,
                                                     AlertRow.delivery == PENDING)
                              .values(delivery=CANCELLED, payload_json="", next_attempt_at=None))
        session.commit()
        return int(result.rowcount or 0)


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
                    col(AlertRuleRow.removed).is_(False), col(AlertRuleRow.paused).is_(False))).all():
                rule = _rule(row)
                if rule.kind == RuleKind.VIOLATION:
                    fired = new_violations(rule, traces, dataset, saved)
                else:
                    one, row.above = share_fired(rule, _recent(session, dataset, rule.window),
                                                 dataset, row.above, saved)
                    session.add(row)
                    fired = [one] if one else []
                silenced = row.silenced_until is not None and row.silenced_until > now
                recorded = [f.key for f in fired if _record(session, row, f, silenced, now)]
                if recorded:
                    new += recorded
                    cap_outbox(session, row)
                    prune_records(session, row.id)
            session.commit()
        return new

    with Session(engine) as session:  # most databases have no rules: no write lock then
        if session.exec(select(AlertRuleRow.id).where(col(AlertRuleRow.removed).is_(False),
                                                      col(AlertRuleRow.paused).is_(False))
                        .limit(1)).first() is None:
            return []
    from store.verdicts import dataset_setting  # alerts decide from the decided record (issue 53)

    saved = dataset_setting(engine, dataset)  # read by write(), once rules are known to exist
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
                     summary=fired.summary, fired_at=now,
                     payload_json=json.dumps(fired.payload) if delivery == PENDING else "",
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


