""""Find the rule" on Replay and Review: for a case whose score decided violation while the
judge's words said compliant (so no rule of the closure stands behind the label yet), ask the
judge which rule the reply most likely breaks and with which words
(``workbench.audit.judge.explain``), store the answer (``store.explanations``, with the acting
identity) and show the card again: every page then reads the rule from the decided record.
Page-private: it calls the model and writes the store."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.errors import show_error
from pages._state import model_gateway
from store.explanations import save_explanations
from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace
from workbench.decision import DecidedVerdict
from workbench.errors import WorkbenchError

FLASH = "explain_flash"


def _find(eng: Engine, dataset: str, record: DecidedVerdict, trace: AuditTrace,
          case: AuditCase) -> None:
    from workbench.audit.judge.explain import explain_violation

    try:
        with st.spinner("Asking the judge which rule the reply breaks (about a minute on the "
                        "embedded model)…"):
            found = explain_violation(model_gateway(), case, trace, record.score)
        save_explanations(eng, dataset, [(record.run, trace, found.explanation)],
                          actor=identity.actor())
    except WorkbenchError as exc:  # the model down, CannotExplain, roles.NotAllowed
        show_error(exc, lead="No rule was found: ")
        return
    e = found.explanation
    queue_nav.leave_flash(FLASH, "success" if e.rule else "warning",
                          f"Found {e.rule} for {record.case}." if e.rule else
                          f"The judge named no rule of the closure for {record.case}: it stays "
                          "to review.")


def find_rule_button(eng: Engine, dataset: str, record: DecidedVerdict | None,
                     trace: AuditTrace | None, case: AuditCase | None, key: str) -> bool:
    """The button under a card whose score decided violation without a rule (or whose rule was
    found this way: ask again). True when it stored an answer (the caller reruns)."""
    queue_nav.show_flash(FLASH)
    if record is None or trace is None or case is None or not record.outcome_violation:
        return False
    if not (record.needs_rule or record.explanation is not None):
        return False
    may = identity.permitted("store audit results")
    again = record.explanation is not None
    if st.button("Find the rule again" if again else "Find the rule", key=f"find_rule_{key}",
                 disabled=not may, icon=":material/search:",
                 help="Ask the judge which policy item of the judged rules the reply most likely "
                      "breaks, and which words of the reply break it (checked against the "
                      "closure and the reply). One model call."
                      + ("" if may else " Your role cannot store audit results.")):
        _find(eng, dataset, record, trace, case)
        return True
    return False
