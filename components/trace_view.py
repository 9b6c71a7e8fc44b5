"""The audit trace, step by step: keywords, routed SKILLs, seeds, closure subgraph, rendered
context. Every value from the case, the policy or the model is shown as plain text."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from components.glossary import column_help
from components.graph_view import provenance_legend
from components.links import graph_link
from components.rule_graph import clicked, closure_legend, rule_graph
from components.rules import RULE_LINK_CONFIG, with_rule_links
from components.safe import md
from workbench import words
from workbench.audit.trace import AuditTrace
from workbench.graph import PolicyIndex, SkillGraph
from workbench.graph.closure import explain_path
from workbench.words import help_for, plural


def show_steps(trace: AuditTrace, index: PolicyIndex | None, key: str) -> None:
    st.markdown("**1 · Audit keywords** " + md(f"({trace.keywords_method or '?'})"))
    st.text(", ".join(trace.keywords) or "(none)")
    st.markdown("**2 · Routed SKILLs** " + md(f"(by {trace.routing or '?'})"))
    st.text(", ".join(trace.skills) or "(none)")
    st.markdown("**3 · Seed rules** (keyword → rule)")
    seeds, matches = trace.seeds, trace.seed_matches
    if seeds:
        rows = pd.DataFrame(
            [{"skill": s, "rule": r, "matched by": ", ".join(matches.get(f"{s}/{r}", []))}
             for s, ids in seeds.items() for r in ids], columns=["skill", "rule", "matched by"])
        st.dataframe(with_rule_links(rows, "", id_column="rule", skill_column="skill"),
                     hide_index=True, width="stretch", key=f"seeds_{key}",
                     column_config=RULE_LINK_CONFIG)
    else:
        st.text("(none)")
    closure = trace.closure
    n_closure = sum(len(v) for v in closure.values())
    if closure:
        st.markdown(f"**4 · Closure**: {plural(n_closure, 'rule')} (seeds marked ★)")
        drawn = [name for name in closure if index is not None and name in index.skills]
        if drawn:
            closure_legend()
            provenance_legend()
        for name, ids in closure.items():
            if name in drawn:
                st.caption(md(name))
                show_closure(trace, index.skills[name], ids, key=f"{key}_{drawn.index(name)}")
            else:
                st.text(f"{name}: {', '.join(ids)}")
        show_why_in_context(trace)
        # The drawing's labels are not links: the same rules as a table, each opening on Graph.
        with st.expander(f"Closure rules ({n_closure}), each linked to the Graph page"):
            listed = pd.DataFrame(
                [{"skill": s, "rule": r, "seed": r in set(seeds.get(s, [])),
                  "why in context": why_in_context(trace, s, r)}
                 for s, ids in closure.items() for r in ids],
                columns=["skill", "rule", "seed", "why in context"])
            st.dataframe(with_rule_links(listed, "", id_column="rule", skill_column="skill"),
                         hide_index=True, width="stretch", key=f"closure_{key}",
                         column_config={**column_help(listed.columns), **RULE_LINK_CONFIG})
    elif trace.passages:
        st.markdown(f"**4 · Passages**: {len(trace.passages)}")
        st.text(", ".join(trace.passages))
    if trace.fallback:
        st.warning(md(f"Fallback applied: {trace.fallback}"))
    st.markdown(f"**5 · Rendered context**: {trace.context_tokens} tokens")
    with st.expander("Context given to the judge"):
        st.code(trace.context or "(empty)", language=None)
    show_window(trace, key)
    if trace.usage:
        with st.expander(f"Model calls ({len(trace.usage)}): {trace.online_tokens} tokens"):
            st.dataframe(model_call_rows(trace), hide_index=True, width="stretch",
                         key=f"usage_{key}")


def model_call_rows(trace: AuditTrace) -> list[dict[str, str]]:
    """The trace's model calls as a person reads them: plain column names ("prompt tokens",
    not ``prompt_tokens``), durations in words, yes/no, "–" for nothing."""
    return [{words.label(k): (words.duration_ms(v) if k == "latency_ms" else words.value(v or None)
                              if k in ("error", "key") else words.value(v))
             for k, v in asdict(c).items()} for c in trace.usage]


def show_closure(trace: AuditTrace, skill: SkillGraph, ids: list[str], key: str) -> None:
    """One SKILL's closure as the Graph page draws it (``components.rule_graph``): labels at
    reading size, seeds and the verdict's violated rules marked, zoom buttons above the
    drawing. A click selects a rule and offers its link to the Graph page."""
    draw_key = f"closure_graph_{key}"
    chosen_key = f"{draw_key}_chosen"

    def remember() -> None:
        st.session_state[chosen_key] = clicked(draw_key)

    # A compliant verdict's citations are not violated rules (as on the verdict card).
    verdict = trace.verdict
    violated = verdict.violated_rules if verdict is not None and verdict.violation else []
    name = skill.name
    chosen = st.session_state.get(chosen_key)
    chosen = chosen if chosen in set(ids) else None
    rule_graph(skill, ids, key=draw_key, selected=chosen, on_select=remember,
               marked={"seeds": trace.seeds.get(name, []),
                       "violated": [r for r in violated if r in set(ids)]})
    if chosen:
        st.markdown(f"[Open {md(chosen)} on the Graph page]({graph_link(name, chosen)})")


def why_in_context(trace: AuditTrace, skill: str, rule: str) -> str:
    """The rule's require path from the seed that brought it, as recorded in the trace
    ("seed R3 → R7 → R9"), or why there is none."""
    path = trace.closure_paths.get(skill, {}).get(rule)
    if path:
        return explain_path(path)
    if not trace.closure_paths:
        return ("every rule of the SKILL (no seeding)" if not trace.seeds
                else "not recorded (audited before paths were kept)")
    return "not recorded"


def show_why_in_context(trace: AuditTrace) -> None:
    """One plain-text line per rule in context: the require path from its seed. Plain text
    (``st.text``), never Markdown: rule ids come from the policy and are shown as they are."""
    st.markdown("**Why each rule is in context** (the require path from its seed)",
                help=help_for("why in context"))
    for name, ids in trace.closure.items():
        lines = [f"{rid}: {why_in_context(trace, name, rid)}" for rid in ids]
        st.text(f"{name}\n" + "\n".join(f"  {line}" for line in lines))


def show_window(trace: AuditTrace, key: str) -> None:
    """How the case fitted the judge's context window: cut turns, and the parts it was
    judged in when the whole context did not fit."""
    fit = trace.window
    if fit is None:
        return
    st.caption(
        f"Judge window {int(fit.window)} tokens ({md(fit.source)}): "
        f"{int(fit.fixed_tokens)} for the prompt, conversation, state and reply, "
        f"{int(fit.answer_tokens)} for the answer, {int(fit.judge_room)} left for the policy."
    )
    if fit.turns_dropped:
        st.warning(
            f"{int(fit.turns_dropped)} oldest of {int(fit.turns_total)} turns "
            f"({int(fit.tokens_dropped)} tokens) were left out to fit the window; the judge was told."
        )
    if trace.parts:
        st.markdown(f"**6 · Judged in {len(trace.parts)} parts** ({md(fit.split or '?')}): "
                    "the context did not fit the judge's window whole")
        rows = [
            {"part": p.index, "mode": p.mode,
             "verdict": "—" if p.violation is None else (
                 "violation" if p.violation else "compliant"),
             "violated": ", ".join(p.violated_rules), "tokens": p.tokens,
             "items": ", ".join(p.units), "reason": p.reason}
            for p in trace.parts
        ]
        st.dataframe(rows, hide_index=True, width="stretch", key=f"parts_{key}")
