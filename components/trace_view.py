"""The audit trace, step by step: keywords, routed SKILLs, seeds, closure subgraph, rendered
context. Every value from the case, the policy or the model is shown as plain text."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.graph_view import show_graph
from components.rules import RULE_LINK_CONFIG, with_rule_links
from components.safe import md
from workbench.graph import PolicyIndex


def show_steps(trace: dict, index: PolicyIndex | None, key: str) -> None:
    st.markdown("**1 · Audit keywords** " + md(f"({trace.get('keywords_method', '?')})"))
    st.text(", ".join(trace.get("keywords") or []) or "(none)")
    st.markdown("**2 · Routed SKILLs** " + md(f"(by {trace.get('routing') or '?'})"))
    st.text(", ".join(trace.get("skills") or []) or "(none)")
    st.markdown("**3 · Seed rules** (keyword → rule)")
    seeds = trace.get("seeds") or {}
    matches = trace.get("seed_matches") or {}
    if seeds:
        rows = pd.DataFrame(
            [{"skill": s, "rule": r, "matched by": ", ".join(matches.get(f"{s}/{r}", []))}
             for s, ids in seeds.items() for r in ids], columns=["skill", "rule", "matched by"])
        st.dataframe(with_rule_links(rows, "", id_column="rule", skill_column="skill"),
                     hide_index=True, width="stretch", key=f"seeds_{key}",
                     column_config=RULE_LINK_CONFIG)
    else:
        st.text("(none)")
    closure = trace.get("closure") or {}
    n_closure = sum(len(v) for v in closure.values())
    if closure:
        st.markdown(f"**4 · Closure**: {n_closure} rules (seeds boxed, prerequisites as dots)")
        for name, ids in closure.items():
            if index is not None and name in index.skills:
                st.caption(md(name))
                show_graph(index.skills[name], ids, seeds=seeds.get(name, []), height_px=380)
            else:
                st.text(f"{name}: {', '.join(ids)}")
        # The drawing's labels are not links: the same rules as a table, each opening on Graph.
        with st.expander(f"Closure rules ({n_closure}), each linked to the Graph page"):
            listed = pd.DataFrame(
                [{"skill": s, "rule": r, "seed": r in set(seeds.get(s, []))}
                 for s, ids in closure.items() for r in ids], columns=["skill", "rule", "seed"])
            st.dataframe(with_rule_links(listed, "", id_column="rule", skill_column="skill"),
                         hide_index=True, width="stretch", key=f"closure_{key}",
                         column_config=RULE_LINK_CONFIG)
    elif trace.get("passages"):
        st.markdown(f"**4 · Passages**: {len(trace['passages'])}")
        st.text(", ".join(trace["passages"]))
    if trace.get("fallback"):
        st.warning(md(f"Fallback applied: {trace['fallback']}"))
    st.markdown(f"**5 · Rendered context**: {trace.get('context_tokens', 0)} tokens")
    with st.expander("Context given to the judge"):
        st.code(trace.get("context") or "(empty)", language=None)
    show_window(trace, key)
    usage = trace.get("usage") or []
    if usage:
        with st.expander(f"Model calls ({len(usage)}): {trace.get('online_tokens', 0)} tokens"):
            st.dataframe(usage, hide_index=True, width="stretch", key=f"usage_{key}")


def show_window(trace: dict, key: str) -> None:
    """How the case fitted the judge's context window: cut turns, and the parts it was
    judged in when the whole context did not fit."""
    fit = trace.get("window")
    if not fit:
        return
    st.caption(
        f"Judge window {int(fit['window'])} tokens ({md(fit['source'])}): "
        f"{int(fit['fixed_tokens'])} for the prompt, conversation, state and reply, "
        f"{int(fit['answer_tokens'])} for the answer, {int(fit['target_tokens'])} left for the policy."
    )
    if fit.get("turns_dropped"):
        st.warning(
            f"{int(fit['turns_dropped'])} oldest of {int(fit['turns_total'])} turns "
            f"({int(fit['tokens_dropped'])} tokens) were left out to fit the window; the judge was told."
        )
    parts = trace.get("parts") or []
    if parts:
        st.markdown(f"**6 · Judged in {len(parts)} parts** ({md(fit.get('split') or '?')}): "
                    "the context did not fit the judge's window whole")
        rows = [
            {"part": p["index"], "mode": p["mode"],
             "verdict": "—" if p.get("violation") is None else (
                 "violation" if p["violation"] else "compliant"),
             "violated": ", ".join(p.get("violated_rules") or []), "tokens": p["tokens"],
             "items": ", ".join(p["units"]), "reason": p.get("reason", "")}
            for p in parts
        ]
        st.dataframe(rows, hide_index=True, width="stretch", key=f"parts_{key}")
