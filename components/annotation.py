"""Widgets of the Annotate page: rule cards, label tables, the keyboard legend.

Every text that comes from a SKILL, a rule, a trace or an annotator is escaped here: HTML is
built with ``html.escape`` and Markdown with ``components.safe.md``; tables go through pandas frames,
which Streamlit renders as text.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

import pandas as pd
import streamlit as st

from workbench.annotation.inspection import InspectionCase, closure_edges
from workbench.annotation.labels import CRITERIA, ERROR_TYPES, Adjudication, Label
from workbench.graph import Rule, SkillGraph
from workbench.words import plural

# One key per label (Streamlit reserves C and R, so "correct" is Y for yes).
CORRECT_KEY = "Y"
NEXT_KEY = "J"
PREVIOUS_KEY = "K"
ERROR_KEYS: dict[str, str] = {str(n): error for n, error in enumerate(ERROR_TYPES, start=1)}
ERROR_TEXT = {
    "not_atomic": "not atomic",
    "wrong_condition": "wrong condition",
    "wrong_action": "wrong action",
    "wrong_modality": "wrong modality",
    "span_unsupported": "span does not support it",
    "hallucinated": "hallucinated",
    "duplicate": "duplicate",
}
CRITERION_TEXT = {
    "skill_governs": "The selected SKILL governs the interaction",
    "rules_atomic_applicable": "The retrieved rules are atomic and applicable",
    "edges_necessary": "Every displayed require edge is a necessary prerequisite",
    "verdict_follows": "The verdict follows from the interaction and the closure",
}
assert set(CRITERION_TEXT) == set(CRITERIA)

# Theme-following colours (see components/spans.py): inherited text, translucent tints.
_CARD_STYLE = (
    "<style>.wb-rule{border:1px solid rgba(128,128,128,0.35);border-radius:6px;"
    "padding:0.6rem 0.8rem;color:inherit;background:rgba(128,128,128,0.06)}"
    ".wb-rule .wb-id{font-weight:600}.wb-rule .wb-mod{display:inline-block;"
    "padding:0 6px;border-radius:4px;background:rgba(100,120,255,0.18);margin-left:6px;"
    "font-size:0.85em}"
    ".wb-rule dt{opacity:0.75;font-size:0.8em;margin-top:0.4rem}.wb-rule dd{margin:0}</style>"
)


def rule_card_html(rule: Rule, heading: str = "") -> str:
    """An escaped HTML card: id, modality, condition and action of an extracted rule."""
    e = html.escape
    title = f"{e(heading)} " if heading else ""
    return (
        f'{_CARD_STYLE}<div class="wb-rule" data-testid="wb-rule-card">'
        f'<div>{title}<span class="wb-id">{e(rule.id)}</span>'
        f'<span class="wb-mod">{e(rule.modality)}</span></div>'
        f"<dl><dt>When</dt><dd>{e(rule.condition)}</dd>"
        f"<dt>Then</dt><dd>{e(rule.action)}</dd></dl></div>"
    )


def rule_card(rule: Rule, heading: str = "") -> None:
    st.html(rule_card_html(rule, heading))


def correctness_legend() -> list[tuple[str, str]]:
    return [(CORRECT_KEY, "correct")] + [
        (key, f"incorrect: {ERROR_TEXT[error]}") for key, error in ERROR_KEYS.items()
    ] + [(NEXT_KEY, "next"), (PREVIOUS_KEY, "previous")]


def describe(value: str, error_type: str | None) -> str:
    """``"incorrect (wrong action)"`` or ``"correct"``: a label as people read it."""
    return f"{value} ({ERROR_TEXT.get(error_type, error_type)})" if error_type else value


def labels_frame(labels: Iterable[Label]) -> pd.DataFrame:
    rows = [
        {"annotator": lab.annotator, "label": describe(lab.value, lab.error_type),
         "note": lab.note, "by": lab.source,
         "when": lab.created_at.strftime("%Y-%m-%d %H:%M")}
        for lab in labels
    ]
    return pd.DataFrame(rows, columns=["annotator", "label", "note", "by", "when"])


def adjudication_text(adjudication: Adjudication) -> str:
    return (f"Adjudicated by {adjudication.reviewer}: "
            f"{describe(adjudication.value, adjudication.error_type)}"
            + (f" — {adjudication.note}" if adjudication.note else ""))


def case_view(case: InspectionCase, load_graph: Callable[[str], SkillGraph | None]) -> None:
    """An audit case as an inspector needs it: SKILLs, interaction, closure rules (from the
    stored graph when ``load_graph`` finds the SKILL), require edges and the verdict."""
    verdict = {True: "violation", False: "no violation", None: "unknown"}[case.violation]
    st.text(f"Case {case.case_id}" + (f" · run {case.run_id}" if case.run_id else "")
            + f" · SKILLs: {', '.join(case.skills) or '(none)'} · verdict: {verdict}")
    with st.expander("Interaction", expanded=True):
        for title, text in (("History", case.history), ("State", case.state),
                            ("Response", case.response)):
            if text:
                st.caption(title)
                st.text(text)
    for name in case.skills or list(case.closure):
        graph = load_graph(name) if name else None
        rules = graph.graph.rules if graph else {}
        ids = case.closure.get(name, ())
        seeds = set(case.seeds.get(name, ()))
        st.text(f"Closure of {name or '(SKILL not named)'}: {plural(len(ids), 'rule')}, "
                f"{plural(len(seeds), 'seed')}")
        st.dataframe(pd.DataFrame([
            {"rule": rid, "seed": rid in seeds, "violated": rid in case.violated_rules,
             "modality": rules[rid].modality if rid in rules else "",
             "condition": rules[rid].condition if rid in rules else "",
             "action": rules[rid].action if rid in rules else "(not in the store)"}
            for rid in ids
        ], columns=["rule", "seed", "violated", "modality", "condition", "action"]),
            hide_index=True, key=f"insp_rules/{name}")
        edges = closure_edges(case, name, graph)
        st.text("Require edges: " + ("; ".join(f"{e.source} requires {e.target}" for e in edges)
                                    or "none"))
    if case.rendered_context:
        with st.expander("Policy context the judge saw"):
            st.text(case.rendered_context)
    if case.reason:
        st.caption("Judge's reason")
        st.text(case.reason)
