"""Deciding verdicts on the Review page: the three decisions with a note, by button or key;
undo of the analyst's last action; the same decision on many verdicts at once, with a
preview of what it records. Page-private: the writes go to ``store.review`` with the acting
identity (the store checks the role and the name itself).

Messages of a decision are drawn right under its buttons (``FLASH``): "an overturn needs a
note" appears where the analyst is looking, not at the top of the page.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.key_help import key_help
from components.safe import md
from store import review as review_store
from workbench.errors import WorkbenchError
from workbench.review.decisions import WRONG_RULE, describe_action, last_action
from workbench.review.queue import (
    DECISION_TEXT,
    DECISIONS,
    QueueItem,
    ReviewDecision,
    decision_on,
    item_text,
    plan_bulk,
    shown_stands,
)

CONFIRM_KEY, OVERTURN_KEY, WRONG_RULE_KEY, UNDO_KEY = "y", "n", "w", "u"
NEXT_KEY, PREVIOUS_KEY = "j", "k"
FLASH = "rv_flash"
BULK_FLASH = "rv_bulk_flash"
KEYS = [(CONFIRM_KEY.upper(), "confirm the verdict"), (OVERTURN_KEY.upper(), "overturn it (note first)"),
        (WRONG_RULE_KEY.upper(), "right verdict, wrong rule cited (note first)"),
        (UNDO_KEY.upper(), "undo your last decision"), (NEXT_KEY.upper(), "next verdict"),
        (PREVIOUS_KEY.upper(), "previous verdict"), ("Tab", "leave the note field")]
VERB = {"confirm": "Confirmed", "overturn": "Overturned", WRONG_RULE: "Marked “wrong rule” on"}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def item_key(item: QueueItem) -> str:
    """A widget-key-safe id of a verdict: readable, and unique through a digest."""
    text = item_text(item.key)
    return f"{_safe(text)[:60]}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def record_decisions(eng: Engine, decisions: list[ReviewDecision], reviewer: str, flash: str = FLASH) -> bool:
    """Store ``decisions`` as one action; leave the outcome as the flash. A shortcut key
    must not get past the role: the page asks, and the store checks again."""
    if not identity.allowed("decide reviews"):
        queue_nav.leave_flash(flash, "error", "Your role cannot decide reviews; nothing saved.")
        return False
    try:
        review_store.add_decisions(eng, decisions, actor=identity.actor(reviewer))
    except WorkbenchError as exc:  # ReviewError (a note missing), roles.NotAllowed
        queue_nav.leave_flash(flash, "error", str(exc))
        return False
    return True


def _shown_words(item: QueueItem) -> tuple[str, str]:
    """What confirm and overturn say of this card: (confirm's label, overturn's label)."""
    stands = shown_stands(item.verdict)
    if stands is None:
        return "the verdict stands", "it does not"
    return ("violation", "compliant") if stands else ("compliant", "violation")


def _decide(eng: Engine, item: QueueItem, decision: str, reviewer: str, pos_key: str, size: int,
            advance: bool) -> None:
    note = st.session_state.get(f"rv_note_{item_key(item)}", "") or ""
    # What the card showed and what the analyst says: confirm, overturn and wrong rule stand
    # for or against the label shown (workbench.review.queue.decision_on).
    made = decision_on(item.verdict, item.dataset, reviewer, decision, note)
    if not record_decisions(eng, [made], reviewer):
        return
    queue_nav.leave_flash(FLASH, "success", f"{VERB[decision]} the {item.strategy} verdict on "
                          f"{item.case_id}. Press {UNDO_KEY.upper()} to undo.")
    if advance:
        queue_nav.advance(pos_key, size)


def _undo(eng: Engine, dataset: str, reviewer: str, expected: tuple[int, ...], pos_key: str,
          shown: Sequence[tuple]) -> None:
    if not identity.allowed("decide reviews"):
        queue_nav.leave_flash(FLASH, "error", "Your role cannot decide reviews; nothing undone.")
        return
    try:
        undone = review_store.undo_last(eng, dataset, reviewer, actor=identity.actor(reviewer),
                                        expected=expected)
    except WorkbenchError as exc:  # StaleUndo (pressed twice, another tab), NotAllowed
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    if not undone:
        queue_nav.leave_flash(FLASH, "info", "Nothing to undo: you have no decision here yet.")
        return
    queue_nav.leave_flash(FLASH, "success", f"Undone: {describe_action(undone)}.")
    if len(undone) == 1 and undone[0].key in shown:  # back to the verdict it was about
        st.session_state[pos_key] = list(shown).index(undone[0].key)


def decision_buttons(eng: Engine, item: QueueItem, reviewer: str, decisions: list[ReviewDecision],
                     pos_key: str, pos: int, shown: Sequence[QueueItem], advance: bool) -> None:
    """The three decisions, this verdict's messages right under them, the note, undo,
    previous/next, the key legend and the ``?`` help. Drawn right under the card's label
    (``components.verdict.show_verdict``'s ``actions``), so the first decision button is in
    the first screen at 1280×800 (issue 56): the buttons first, the note (which only an
    overturn or a wrong rule needs, and a button press reads) under them."""
    args = (reviewer, pos_key, len(shown), advance)
    may_decide = identity.permitted("decide reviews")
    off = not reviewer or not may_decide
    # Short labels in a row that wraps: three columns cut "Confirm verdict" to "C… Y" at
    # 800 px and to "Confirm ver…" at 1280 (issue 44). The full meaning and the key are in
    # each button's tooltip; the key also shows on the button.
    buttons = st.container(horizontal=True, wrap=True, gap="small", key="rv_decisions")
    said = _shown_words(item)
    buttons.button("Confirm", key="rv_confirm", shortcut=CONFIRM_KEY, type="primary",
                   on_click=_decide, args=(eng, item, "confirm", *args), disabled=off,
                   help=f"Confirm the verdict ({CONFIRM_KEY.upper()}): you say {said[0]}.")
    buttons.button("Overturn", key="rv_overturn", shortcut=OVERTURN_KEY,
                   on_click=_decide, args=(eng, item, "overturn", *args), disabled=off,
                   help=f"Overturn the verdict ({OVERTURN_KEY.upper()}): you say {said[1]}; "
                        "write the note first.")
    buttons.button("Wrong rule", key="rv_wrong_rule", shortcut=WRONG_RULE_KEY,
                   on_click=_decide, args=(eng, item, WRONG_RULE, *args),
                   disabled=off or shown_stands(item.verdict) is not True,
                   help=f"Right verdict, wrong rule ({WRONG_RULE_KEY.upper()}): the violation is "
                        "real but the rule behind it is not the one broken; the note names the "
                        "right one. Only a violation rests on rules.")
    queue_nav.show_flash(FLASH)
    # No help icon: its button would share the field's label (and a test's, a reader's).
    # The label is folded (the placeholder says it; readers and tests still find the field
    # by it): its line pushed the buttons down.
    st.text_input("Note (required to overturn)", key=f"rv_note_{item_key(item)}",
                  label_visibility="collapsed",
                  placeholder="Note (required to overturn or for a wrong rule): why, or the "
                              "rule that applies; Tab leaves the field, then press a key")
    action = last_action(decisions, reviewer, item.dataset) if reviewer else []
    expected = tuple(sorted(d.id for d in action if d.id is not None))
    st.button(f"Undo: {describe_action(action)}" if action else "Undo (nothing to undo)",
              key="rv_undo", shortcut=UNDO_KEY, disabled=off or not action, wrap=True,
              on_click=_undo, args=(eng, item.dataset, reviewer, expected, pos_key,
                                    [i.key for i in shown]))
    queue_nav.nav_buttons("rv", pos_key, pos, len(shown), PREVIOUS_KEY, NEXT_KEY)
    queue_nav.key_legend([(CONFIRM_KEY.upper(), "confirm"), (OVERTURN_KEY.upper(), "overturn"),
                          (WRONG_RULE_KEY.upper(), "wrong rule"), (UNDO_KEY.upper(), "undo"),
                          (NEXT_KEY.upper(), "next"), (PREVIOUS_KEY.upper(), "previous"),
                          ("?", "all keys")])
    key_help(KEYS)


def _bulk(eng: Engine, targets: list[QueueItem], reviewer: str, decisions: list[ReviewDecision]) -> None:
    decision = st.session_state.get("rv_bulk_decision", "confirm")
    note = st.session_state.get("rv_bulk_note", "") or ""
    plan = plan_bulk(targets, decision, reviewer, note, decisions)
    if not plan.decisions:
        queue_nav.leave_flash(BULK_FLASH, "info", "Nothing recorded: no verdict can take that decision.")
        return
    if record_decisions(eng, plan.decisions, reviewer, BULK_FLASH):
        queue_nav.leave_flash(BULK_FLASH, "success", f"{VERB[decision]} {len(plan.decisions)} "
                              f"verdict(s) at once. Press {UNDO_KEY.upper()} to undo them all.")


def bulk_panel(eng: Engine, shown: list[QueueItem], selected: list[QueueItem], reviewer: str,
               decisions: list[ReviewDecision]) -> None:
    """One decision for many verdicts: those the filters show, or the rows selected in the
    queue list; the preview says what will be recorded before anything is."""
    if not reviewer or not identity.allowed("decide reviews"):
        return
    with st.expander("Decide several verdicts at once"):
        scopes = {f"All {len(shown)} verdicts these filters show": shown,
                  f"The {len(selected)} rows selected in the queue list": selected}
        scope = st.radio("Which verdicts", list(scopes), key="rv_bulk_scope")
        targets = scopes[scope]
        st.radio("Decision", DECISIONS, format_func=DECISION_TEXT.get, horizontal=True,
                 key="rv_bulk_decision")
        st.text_input("Note for each of them", key="rv_bulk_note",
                      help="Required to overturn or to mark “wrong rule”.")
        decision = st.session_state.get("rv_bulk_decision", "confirm")
        plan = plan_bulk(targets, decision, reviewer, st.session_state.get("rv_bulk_note") or "",
                         decisions)
        st.info(md(plan.preview(DECISION_TEXT[decision], reviewer)))
        queue_nav.show_flash(BULK_FLASH)
        st.button(f"{DECISION_TEXT[decision].capitalize()}: {len(plan.decisions)} verdict(s)",
                  key="rv_bulk_apply", disabled=not plan.decisions, on_click=_bulk,
                  args=(eng, targets, reviewer, decisions))
