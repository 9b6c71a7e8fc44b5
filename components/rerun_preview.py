"""Replay's re-run as a preview: the new verdict beside the stored one with what changed.
Nothing here writes; the page stores a new result only when the user presses "Store this
result", into a run of its own (issue #16: the old button replaced the stored verdict
silently and mixed a one-case run into the results). A re-run without a verdict (no judge,
or the model failed) has nothing to store: storing it made the case show "not judged" over
its judged trace and put a one-case run with ACC 0.000 on Evaluate (issue #35), so it stays
a preview. What a re-run will cost is said by ``pages/_replay_rerun.py``.
"""

from __future__ import annotations

import streamlit as st

from components import identity
from components.case_table import trace_verdict_word
from components.safe import md
from workbench.audit.trace import AuditTrace
from workbench.vocabulary import error_words
from workbench.words import plural


def _verdict_word(trace: AuditTrace | None) -> str:
    return "nothing stored" if trace is None else trace_verdict_word(trace)


def _closure_ids(trace: AuditTrace) -> set[str]:
    return {f"{skill}/{rid}" for skill, ids in trace.closure.items() for rid in ids}


def _cited(trace: AuditTrace | None) -> set[str]:
    return set(trace.verdict.violated_rules) if trace is not None and trace.verdict else set()


def trace_diff(stored: AuditTrace | None, new: AuditTrace) -> list[str]:
    """Plain lines saying how ``new`` differs from ``stored`` (empty: the same verdict, cited
    rules, closure and context size)."""
    lines = []
    before, after = _verdict_word(stored), _verdict_word(new)
    if before != after:
        lines.append(f"Verdict: {before} → {after}")
    old_cited, new_cited = _cited(stored), _cited(new)
    if new_cited - old_cited:
        lines.append("Newly cited rules: " + ", ".join(sorted(new_cited - old_cited)))
    if old_cited - new_cited:
        lines.append("No longer cited: " + ", ".join(sorted(old_cited - new_cited)))
    if stored is not None:
        added = _closure_ids(new) - _closure_ids(stored)
        removed = _closure_ids(stored) - _closure_ids(new)
        if added:
            lines.append(f"Closure gained {plural(len(added), 'rule')}: " + ", ".join(sorted(added)[:10]))
        if removed:
            lines.append(f"Closure lost {plural(len(removed), 'rule')}: " + ", ".join(sorted(removed)[:10]))
        if stored.context_tokens != new.context_tokens:
            lines.append(f"Context tokens: {stored.context_tokens} → {new.context_tokens}")
    return lines


def show_rerun_preview(strategy: str, stored: AuditTrace | None,
                       new: AuditTrace, key: str, may_store: bool = True) -> bool:
    """The stored and the new verdict side by side with their differences; returns ``True``
    when the user asks to store the new result. Without ``may_store`` (the role may not
    store audit results) there is no Store button, only the reason."""
    with st.container(border=True, key=f"preview_{key}"):
        st.markdown(f"**Preview of a new audit — {md(strategy)}**")
        c1, c2 = st.columns(2)
        c1.metric("Stored", _verdict_word(stored))
        c2.metric("New (not stored)", _verdict_word(new))
        diff = trace_diff(stored, new)
        if diff:
            st.text("\n".join(diff))
        else:
            st.caption("Same verdict, cited rules and closure as the stored trace.")
        reason = new.verdict.reason if new.verdict is not None else ""
        if reason:
            with st.expander("New reason"):
                st.text(str(reason))
        if new.verdict is None:
            stopped = f" ({error_words(new.error.kind)})" if new.error else ""
            why = ("it was run without a judge" if new.judge_mode == "none" else
                   "the audit stopped before a verdict" + stopped)
            st.caption(md(f"Nothing to store: {why}, so it has no verdict; the stored trace "
                          "stays as it is. Re-run with a judge to store a new result."))
            return False
        if not may_store:
            identity.explain_refusal("store audit results")
            return False
        return st.button("Store this result", key=f"preview_store_{key}",
                         help="Saves the new trace as a run of its own; the stored one is kept.")
