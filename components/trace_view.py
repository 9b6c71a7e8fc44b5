"""The audit trace, step by step: keywords, routed SKILLs, seeds, closure subgraph, rendered
context. Every value from the case, the policy or the model is shown as plain text."""

from __future__ import annotations

import streamlit as st

from components.graph_view import show_graph
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
        rows = [{"skill": s, "rule": r, "matched by": ", ".join(matches.get(f"{s}/{r}", []))}
                for s, ids in seeds.items() for r in ids]
        st.dataframe(rows, hide_index=True, width="stretch", key=f"seeds_{key}")
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
    elif trace.get("passages"):
        st.markdown(f"**4 · Passages**: {len(trace['passages'])}")
        st.text(", ".join(trace["passages"]))
    if trace.get("fallback"):
        st.warning(md(f"Fallback applied: {trace['fallback']}"))
    st.markdown(f"**5 · Rendered context**: {trace.get('context_tokens', 0)} tokens")
    with st.expander("Context given to the judge"):
        st.code(trace.get("context") or "(empty)", language=None)
    usage = trace.get("usage") or []
    if usage:
        with st.expander(f"Model calls ({len(usage)}): {trace.get('online_tokens', 0)} tokens"):
            st.dataframe(usage, hide_index=True, width="stretch", key=f"usage_{key}")
