"""The verdict card: violation or not, the judge's reason, and each violated rule with its
source span highlighted in the SKILL text."""

from __future__ import annotations

import streamlit as st

from components.links import graph_link
from components.safe import md
from components.spans import show_source
from workbench.audit.trace import AuditTrace
from workbench.graph import PolicyIndex


def locate_rule(index: PolicyIndex, closure: dict[str, list[str]], rule_id: str):
    """(skill, rule) for a cited id: first in the judged closure's SKILLs, then anywhere."""
    for name, ids in closure.items():
        if rule_id in ids and name in index.skills:
            skill = index.skills[name]
            return skill, skill.graph.rules.get(rule_id)
    for skill in index:
        if rule_id in skill.graph.rules:
            return skill, skill.graph.rules[rule_id]
    return None, None


def show_verdict(trace: AuditTrace, index: PolicyIndex | None, key: str) -> None:
    verdict, error = trace.verdict, trace.error
    with st.container(border=True, key=f"verdict_{key}"):
        if error is not None:
            st.error(f"No verdict — {md(error.kind)}: {md(error.message)}")
            return
        if verdict is None:
            st.info("Not judged (run with a judge to get a verdict).")
            return
        if verdict.violation:
            st.error("Violation", icon="⚠️")
        else:
            st.success("Compliant", icon="✅")
        if trace.parts:
            st.caption(f"Judged in {len(trace.parts)} parts: the context did not fit the "
                       "judge's window whole (parts listed with the trace steps).")
        st.caption("Reason given by the judge")
        st.text(verdict.reason)
        if verdict.unknown_rule_ids:
            st.warning("Cited ids not in the judged context (flagged): "
                       + md(", ".join(verdict.unknown_rule_ids)))
        if verdict.violation and not verdict.reason_cites:
            st.warning("The reason cites none of the violated rule ids.")
        for rid in verdict.violated_rules:
            skill, rule = locate_rule(index, trace.closure, rid) if index else (None, None)
            # The id is md-escaped text; the link's values are percent-encoded (no ")" or
            # space can end the markdown link early).
            st.markdown(f"**Violated rule [{md(rid)}]({graph_link(skill.name, rid)})**" if rule
                        else f"**Cited {md(rid)}**")
            if rule is None:
                st.caption("(not a rule of the loaded index — a passage id or an unknown id)")
                continue
            st.text(f"{skill.name} · {rule.modality}\nWhen: {rule.condition}\nThen: {rule.action}")
            if rule.spans:
                show_source(skill.source, rule.spans, context_chars=250)
        if verdict.per_rule:
            with st.expander(f"Per-rule answers ({len(verdict.per_rule)})"):
                st.dataframe(verdict.per_rule, hide_index=True, width="stretch")
