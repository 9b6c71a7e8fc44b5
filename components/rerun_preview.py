"""Replay's re-run as a preview: what a new audit will do (said before it runs), and the new
verdict beside the stored one with what changed. Nothing here writes; the page stores a new
result only when the user presses "Store this result", into a run of its own (issue #16: the
old button replaced the stored verdict silently and mixed a one-case run into the results).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from components import identity
from components.case_table import trace_verdict_word
from components.safe import md
from workbench.audit.trace import AuditTrace
from workbench.vocabulary import JudgeMode, KeywordMethod

# Rough seconds per model call on the embedded model (Qwen2.5-Coder-1.5B on CPU): two judge
# calls on Replay took about six minutes in the walk-through. Other endpoints are
# faster; the plan says "up to".
SECONDS_PER_CALL = 180


def planned_calls(strategies: Sequence[str], keywords: str, judge_mode: str,
                  closure_sizes: Mapping[str, int] | None = None) -> int:
    """Model calls a new audit makes: one keyword call per strategy with LLM keywords, and per
    strategy one judge call (whole) or one per judged rule (per-rule, using the stored
    closure's size when known, else 1 as a floor)."""
    closure_sizes = closure_sizes or {}
    calls = 0
    for s in strategies:
        calls += 1 if keywords == KeywordMethod.LLM else 0
        if judge_mode == JudgeMode.WHOLE:
            calls += 1
        elif judge_mode == JudgeMode.PER_RULE:
            calls += max(1, closure_sizes.get(s, 1))
    return calls


def plan_text(strategies: Sequence[str], keywords: str, judge_mode: str, calls: int) -> str:
    what = " and ".join(strategies)
    if calls == 0:
        return (f"Runs {what} without a model (lexical keywords, no judge): a few seconds. "
                "The result is a preview; nothing is stored unless you say so.")
    minutes = max(1, round(calls * SECONDS_PER_CALL / 60))
    return (f"Runs {what} with judge “{judge_mode}” and {keywords} keywords: {calls} model "
            f"call(s), up to about {minutes} min on the embedded model. The result is a "
            "preview beside the stored verdict; nothing is stored unless you say so.")


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
            lines.append(f"Closure gained {len(added)} rule(s): " + ", ".join(sorted(added)[:10]))
        if removed:
            lines.append(f"Closure lost {len(removed)} rule(s): " + ", ".join(sorted(removed)[:10]))
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
        if not may_store:
            identity.explain_refusal("store audit results")
            return False
        return st.button("Store this result", key=f"preview_store_{key}",
                         help="Saves the new trace as a run of its own; the stored one is kept.")
