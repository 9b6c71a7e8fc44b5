"""Rule correctness on the Annotate page: judge one extracted rule at a time by keyboard,
blind (an annotator sees only their own labels, and a reviewer's decisions once their queue
is settled: a decision marks a disagreement); reviewers see every label and adjudicate the
disagreements."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components import annotation as ui
from components import identity, queue_nav
from components.spans import show_source
from pages._annotate_queue import ensure_queue
from pages._annotate_session import flash, leave_flash, signed_in
from store import annotation as store
from workbench.annotation.items import rule_items
from workbench.annotation.labels import RULE_CORRECTNESS, Adjudication, Annotator, Label, LabelError
from workbench.annotation.resolution import agreement_access, current_labels, visible_labels
from workbench.graph import Rule
from workbench.identity.roles import NotAllowed


def _disagreements(queue: list[str], labels: list[Label], adjudicated: set[str]) -> list[str]:
    values: dict[str, set] = {}
    for lab in current_labels(labels):  # as in resolve(): the value decides, not error types
        if lab.source == "human":
            values.setdefault(lab.item, set()).add(lab.value)
    return [k for k in queue if len(values.get(k, ())) > 1 and k not in adjudicated]


def _record(eng: Engine, item: str, value: str, error_type: str | None, pos_key: str, size: int,
            advance: bool) -> None:
    """Button callback: store the annotator's label (or the reviewer's decision), move on."""
    who = signed_in()
    if who is None:  # signed out or switched role in another tab since the page was drawn
        return
    note = (st.session_state.get(f"rc_note/{item}") or "").strip()
    try:
        if who.is_reviewer:
            store.add_adjudication(eng, Adjudication(item, RULE_CORRECTNESS, who.name, value,
                                                     error_type, note), actor=identity.actor())
        else:
            store.add_label(eng, Label(item, RULE_CORRECTNESS, who.name, value, error_type, note),
                            actor=identity.actor())
    except (LabelError, NotAllowed) as exc:
        leave_flash("error", str(exc))
        return
    leave_flash("success", f"Saved {ui.describe(value, error_type)}.")
    if advance:
        queue_nav.advance(pos_key, size)


@st.fragment
def rule_correctness(eng: Engine, skill, version: int, who: Annotator) -> None:
    items = rule_items(skill)
    if not items:
        st.info("This SKILL version has no extracted rules to judge.")
        return
    queue = ensure_queue(eng, RULE_CORRECTNESS, skill.name, version, list(items))
    labels = [lab for lab in store.labels_for(eng, RULE_CORRECTNESS) if lab.item in items]
    adjudications = [a for a in store.adjudications_for(eng, RULE_CORRECTNESS) if a.item in items]
    decided = {a.item: a for a in adjudications}  # oldest first, so the newest wins
    # A decision exists where the annotators disagreed: blind, like the agreement figures.
    decisions_shown = agreement_access(who, labels, adjudications, RULE_CORRECTNESS, queue).visible
    only = who.is_reviewer and st.toggle("Only disagreements", value=True,
                                         key="rc_only_disagreements")
    # A decided disagreement leaves the list, so the next one moves up without a step.
    shown = _disagreements(queue, labels, set(decided)) if only else queue
    if not shown:
        st.success("No disagreement waits for adjudication in this SKILL version.")
        return
    mine = {lab.item for lab in labels if lab.annotator == who.name}
    pos_key = f"rc_pos/{skill.name}/{version}/{who.name}/{who.role}"
    if pos_key not in st.session_state:  # continue where this annotator left off
        todo = [i for i, k in enumerate(shown) if k not in mine]
        st.session_state[pos_key] = todo[0] if todo else 0
    pos = queue_nav.position(pos_key, len(shown))
    item = shown[pos]
    rule: Rule = skill.graph.rules[items[item]]

    done = len(mine & set(queue))
    st.progress(done / len(queue), text=f"Rule {pos + 1} of {len(shown)} · you labelled "
                f"{done} of {len(queue)}")
    flash()
    left, right = st.columns([1, 1])
    with left:
        ui.rule_card(rule, heading=f"{pos + 1}/{len(shown)}")
        st.text_input("Note (optional)", key=f"rc_note/{item}",
                      placeholder="why; press Tab to leave the field, then a key")
        verb = "Adjudicate" if who.is_reviewer else "Mark"
        st.button(f"{verb} correct", key="rc_correct", shortcut=ui.CORRECT_KEY, type="primary",
                  on_click=_record, args=(eng, item, "correct", None, pos_key, len(shown), not only))
        # A row that wraps, each button as wide as its words: two fixed columns cut the
        # longer error names ("span does not support it") at 800 px.
        with st.container(horizontal=True, wrap=True):
            for key, error in ui.ERROR_KEYS.items():
                st.button(f"{ui.ERROR_TEXT[error]}", key=f"rc_err_{error}", shortcut=key,
                          on_click=_record,
                          args=(eng, item, "incorrect", error, pos_key, len(shown), not only),
                          width="content")
        queue_nav.nav_buttons("rc", pos_key, pos, len(shown), ui.PREVIOUS_KEY, ui.NEXT_KEY)
        queue_nav.key_legend(ui.correctness_legend())
        _labels_of_item(item, labels, decided.get(item) if decisions_shown else None, who)
    with right:
        show_source(skill.source, rule.spans, context_chars=700)


def _labels_of_item(item: str, labels: list[Label], decided: Adjudication | None,
                    who: Annotator) -> None:
    seen = visible_labels(current_labels(labels), who, item, RULE_CORRECTNESS)
    own = [lab for lab in seen if lab.annotator == who.name]
    if own:
        st.text(f"Your label: {ui.describe(own[0].value, own[0].error_type)}")
    if not who.is_reviewer:
        st.caption("Blind annotation: other annotators' labels are never shown to you; "
                   "a reviewer adjudicates disagreements, and their decisions show here once "
                   "you have labelled every rule of this version and each is settled.")
    else:
        others = [lab for lab in seen if lab.annotator != who.name]
        if others:
            st.dataframe(ui.labels_frame(others), hide_index=True, key="rc_others")
        else:
            st.caption("No other labels yet.")
    if decided is not None:
        st.text(ui.adjudication_text(decided))
