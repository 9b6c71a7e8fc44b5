"""The verdict card: violation or not and how likely, the judge's reason, the words of the
reply it rests on (highlighted in the reply), and each violated rule with its source span
highlighted in the SKILL text."""

from __future__ import annotations

import streamlit as st

from components.links import graph_link
from components.safe import md
from components.spans import highlighted_html, show_source
from workbench.audit.calibration import ThresholdSetting
from workbench.audit.evidence import with_quotes
from workbench.audit.selective import probability_words
from workbench.audit.trace import AuditTrace
from workbench.graph import PolicyIndex, Span

_REPLY_STYLE = (
    "<style>.wb-reply{white-space:pre-wrap;line-height:1.5;color:inherit;padding:0.5rem 0.7rem;"
    "border-left:3px solid rgba(128,128,128,0.5);background:rgba(128,128,128,0.08)}"
    ".wb-reply mark{background:#ffb3b3;color:#1b1f24;padding:0 1px}</style>"
)


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


def show_evidence(reply: str, evidence: list[dict]) -> None:
    """The reply with the verdict's evidence spans marked (escaped text, our marks only)."""
    spans = [Span(e["start"], e["end"]) for e in with_quotes(reply, evidence)]
    if not spans:
        return
    st.caption("Words of the reply the verdict rests on")
    st.html(_REPLY_STYLE + f'<div class="wb-reply" data-testid="wb-evidence">'
            f"{highlighted_html(reply, spans)}</div>")


def show_verdict(trace: AuditTrace, index: PolicyIndex | None, key: str, reply: str | None = None,
                 setting: ThresholdSetting | None = None) -> None:
    """``reply``: the audited reply, to mark the evidence in; ``setting``: the saved
    threshold and calibration that read the probability (none: 0.5, uncalibrated)."""
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
        if words := probability_words(verdict, setting):
            st.markdown(f"**{md(words)}**", help=_probability_help(verdict, setting))
        if reply is not None and verdict.evidence:
            show_evidence(reply, verdict.evidence)
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


def _probability_help(verdict, setting: ThresholdSetting | None) -> str:
    source = verdict.probability_source or "unknown"
    how = ("the judge's own probability for its verdict token" if source == "logprobs"
           else f"the share of {source.split(':')[-1]} sampled answers that found a violation"
           if source.startswith("sampled") else source)
    threshold = setting.threshold if setting is not None else 0.5
    cal = ("calibrated on labelled cases of this dataset" if setting is not None and setting.calibration
           else "not calibrated: no threshold was saved for this dataset")
    return (f"Probability of violation {verdict.probability:.2f}, from {how}; decided a violation "
            f"at {threshold:.2f} or above; {cal}. The percentage is the chance the stated "
            "outcome is right.")
