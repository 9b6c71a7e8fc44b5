"""Alerts on the Review page: what the saved rules (``workbench alerts``) fired on this
dataset's new verdicts, whether the webhook got each one, and an Acknowledge button per open
alert; a rule's alerts can be silenced for an hour; alerts dropped unsent from a full outbox
are counted. An admin also manages the rules here (pause or resume, edit the webhook and its
settings, remove), as `workbench alerts pause|edit|remove` does. Page-private: the writes go
to ``store.alerts`` with the acting identity (the store checks the role itself)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.safe import md
from store import alerts as alert_store
from workbench.errors import WorkbenchError
from workbench.llm.redact import redact_url
from workbench.words import plural

FLASH = "rv_alert_flash"
DELIVERY_WORDS = {"pending": "sending", "delivered": "sent", "failed": "not sent (gave up)",
                  "silenced": "silenced", "none": "no webhook",
                  "dropped": "not sent (outbox full)", "cancelled": "not sent (rule removed)"}
SILENCE_MINUTES = 60
MANAGE = "change settings"  # the role-table action of pausing, editing and removing rules


def alerts_panel(eng: Engine, dataset: str, reviewer: str) -> None:
    """The dataset's open alerts (newest first), each acknowledgeable; nothing when there
    are no alert rules."""
    rules = alert_store.rules(eng)
    if not rules:
        return
    open_alerts = alert_store.alerts(eng, open_only=True, dataset=dataset, limit=50)
    title = f"Alerts: {plural(len(open_alerts), 'open alert')}" if open_alerts else "Alerts"
    # Closed: below the queue, so the case card stays above the fold; the title has the count.
    with st.expander(title, expanded=False):
        queue_nav.show_flash(FLASH)
        if not open_alerts:
            st.caption(f"No open alerts on {dataset}. Rules: "
                       + "; ".join(rule.describe() for rule, _row in rules))
        for alert, rule_name in open_alerts:
            cols = st.columns([5, 1])
            cols[0].markdown(md(f"**{rule_name}** · {alert.fired_at:%Y-%m-%d %H:%M} UTC · "
                                f"{DELIVERY_WORDS.get(alert.delivery, alert.delivery)}  \n"
                                f"{alert.summary}"))
            cols[1].button("Ack", key=f"rv_alert_ack_{alert.id}", help="acknowledge: you saw it",
                           on_click=_acknowledge, args=(eng, alert.id, reviewer))
        for rule, row in rules:
            if row.dropped:
                st.warning(md(f"Rule **{rule.name}**: {plural(row.dropped, 'alert')} dropped "
                              f"unsent: more than {alert_store.OUTBOX_CAP:,} waited for its "
                              "webhook."))
        names = [rule.name for rule, _row in rules]
        cols = st.columns([3, 2])
        chosen = cols[0].selectbox("Rule", names, key="rv_alert_rule", label_visibility="collapsed")
        cols[1].button("Silence 1 h", key="rv_alert_silence", on_click=_silence,
                       args=(eng, chosen, reviewer),
                       help="its alerts are recorded and shown, not posted, for an hour")
        if identity.allowed(MANAGE):
            _manage(eng, dict((rule.name, row) for rule, row in rules), chosen, reviewer)


def _manage(eng: Engine, rows: dict, name: str, reviewer: str) -> None:
    """The admin's controls for rule ``name``: pause/resume, remove, edit."""
    row = rows[name]
    where = redact_url(row.webhook) if row.webhook else "no webhook"
    state = f"paused by {row.paused_by or 'an admin'}" if row.paused else "active"
    st.caption(md(f"Rule **{name}** ({state}) posts to {where}"
                  + (f", credential from `{row.auth_env}`" if row.auth_env else "")))
    cols = st.columns(2)
    cols[0].button("Resume" if row.paused else "Pause", key="rv_alert_pause",
                   on_click=_pause, args=(eng, name, not row.paused, reviewer),
                   help="a paused rule fires nothing and posts nothing until resumed")
    cols[1].button("Remove rule", key="rv_alert_remove", on_click=_remove,
                   args=(eng, name, reviewer), help="it fires no more; alerts waiting are not sent")
    with st.form("rv_alert_edit", border=True):
        webhook = st.text_input("Webhook", row.webhook, help="a public http(s) address, no "
                                "credential in it ('' for none: alerts shown here only)")
        auth_env = st.text_input("Credential variable", row.auth_env,
                                 help="environment variable (or secrets.toml key) holding the "
                                 "Authorization value; never the secret itself")
        probability = st.number_input("Probability", 0.0, 1.0, float(row.probability), 0.05,
                                      help="a violation rule fires from this P(violation)")
        if st.form_submit_button("Save rule"):
            _edit(eng, name, {"webhook": webhook.strip(), "auth_env": auth_env.strip(),
                              "probability": probability}, reviewer)


def _write(action: str, done: str, write) -> None:
    """Run a store write, leaving its outcome as the panel's flash."""
    if not identity.allowed(action):
        queue_nav.leave_flash(FLASH, "error", "Your role cannot do this; nothing saved.")
        return
    try:
        write()
    except WorkbenchError as exc:
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    queue_nav.leave_flash(FLASH, "success", done)


def _acknowledge(eng: Engine, alert_id: int, reviewer: str) -> None:
    _write("decide reviews", f"Alert {alert_id} acknowledged.",
           lambda: alert_store.acknowledge(eng, [alert_id], actor=identity.actor(reviewer)))


def _silence(eng: Engine, name: str, reviewer: str) -> None:
    _write("decide reviews", f"Rule {name} silenced for {SILENCE_MINUTES} minutes.",
           lambda: alert_store.silence_rule(eng, name, SILENCE_MINUTES,
                                            actor=identity.actor(reviewer)))


def _pause(eng: Engine, name: str, paused: bool, reviewer: str) -> None:
    _write(MANAGE, f"Rule {name} {'paused' if paused else 'resumed'}.",
           lambda: alert_store.pause_rule(eng, name, paused, actor=identity.actor(reviewer)))


def _remove(eng: Engine, name: str, reviewer: str) -> None:
    _write(MANAGE, f"Rule {name} removed.",
           lambda: alert_store.remove_rule(eng, name, actor=identity.actor(reviewer)))


def _edit(eng: Engine, name: str, changes: dict, reviewer: str) -> None:
    _write(MANAGE, f"Rule {name} saved.",
           lambda: alert_store.edit_rule(eng, name, changes, actor=identity.actor(reviewer)))
