"""Which settings a stored trace was audited with, in one line of plain words: strategy,
judge mode, keywords, seeding, the token target, rendering and the model of each role
(issue #35: "the page never says which settings a stored trace used")."""

from __future__ import annotations

import streamlit as st

from components.safe import md
from workbench.audit.trace import AuditTrace

JUDGE_WORDS = {"whole": "one verdict over the whole context", "per-rule": "rule by rule",
               "none": "no judge (contexts only)", "checklist": "checklist"}


def settings_text(trace: AuditTrace) -> str:
    """``"Audited with cdg · judge: one verdict over the whole context · keywords: lexical ·
    seeding: scored · target 2000 tokens · rules rendered compact · judge model: embedded"``;
    settings a trace written before they were kept are said to be unknown."""
    parts = [f"Audited with {trace.strategy}",
             f"judge: {JUDGE_WORDS.get(trace.judge_mode, trace.judge_mode)}",
             f"keywords: {trace.keywords_method}"]
    s = trace.settings or {}
    if not s:
        parts.append("seeding, token target and models not recorded (an older trace)")
        return " · ".join(parts)
    if s.get("seeding"):
        parts.append(f"seeding: {s['seeding']}")
    if s.get("target_tokens"):
        parts.append(f"target {int(s['target_tokens'])} tokens")
    if s.get("budget"):
        parts.append(f"budget {int(s['budget'])} tokens")
    if s.get("render"):
        parts.append(f"rules rendered {s['render']}")
    models = s.get("models") or {}
    if isinstance(models, dict):
        parts += [f"{role} model: {model}" for role, model in models.items()]
    if trace.judge_mode == "none":
        parts.append("no model judged it")
    return " · ".join(parts)


def show_trace_settings(trace: AuditTrace) -> None:
    """The settings line as a caption (escaped: values come from a stored trace)."""
    st.caption(md(settings_text(trace)))
