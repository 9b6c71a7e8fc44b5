"""Alerts on the Review page: what the saved rules (``workbench alerts``) fired on this
dataset's new verdicts, whether the webhook got each one, and an Acknowledge button per open
alert; a rule's alerts can be silenced for an hour. Page-private: the writes go to
``store.alerts`` with the acting identity (the store checks the role itself)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.safe import md
from store import alerts as alert_store
from workbench.errors import WorkbenchError
from workbench.words import plural

FLASH = "rv_alert_flash"
DELIVERY_WORDS = {"pending": "sending", "delivered": "sent", "failed": "not sent (gave up)",
                  "silenced": "silenced", "none": "no webhook"}
SILENCE_MINUTES = 60


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
        names = [rule.name for rule, _row in rules]
        cols = st.columns([3, 2])
        chosen = cols[0].selectbox("Rule", names, key="rv_alert_rule", label_visibility="collapsed")
        cols[1].button("Silence 1 h", key="rv_alert_silence", on_click=_silence,
                       args=(eng, chosen, reviewer),
                       help="its alerts are recorded and shown, not posted, for an hour")


def _acknowledge(eng: Engine, alert_id: int, reviewer: str) -> None:
    if not identity.allowed("decide reviews"):
        queue_nav.leave_flash(FLASH, "error", "Your role cannot acknowledge alerts; nothing saved.")
        return
    try:
        alert_store.acknowledge(eng, [alert_id], actor=identity.actor(reviewer))
    except WorkbenchError as exc:
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    queue_nav.leave_flash(FLASH, "success", f"Alert {alert_id} acknowledged.")


def _silence(eng: Engine, name: str, reviewer: str) -> None:
    if not identity.allowed("decide reviews"):
        queue_nav.leave_flash(FLASH, "error", "Your role cannot silence alerts; nothing saved.")
        return
    try:
        until = alert_store.silence_rule(eng, name, SILENCE_MINUTES, actor=identity.actor(reviewer))
    except WorkbenchError as exc:
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    queue_nav.leave_flash(FLASH, "success", f"Rule {name} silenced until {until:%H:%M} UTC.")
