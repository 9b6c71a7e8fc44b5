"""Glossary: the workbench's words in plain language (the same text as the tooltips)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench.words import TERMS

st.title("Glossary")
st.caption("What the labels, metrics and columns on the other pages mean. Hover a metric or "
           "a column header on any page for the same explanation.")
query = st.text_input("Find a term", key="glossary_query", placeholder="e.g. kappa, PCR, closure")
q = query.strip().lower()
rows = [{"term": t.name, "meaning": t.meaning, "where": t.area} for t in TERMS
        if not q or q in t.name.lower() or q in t.meaning.lower() or q in t.area.lower()]
if not rows:
    st.info("No term matches; clear the search to see all terms.")
else:
    # A table whose cells wrap: each meaning is read whole (a data grid cut it at ~55
    # characters, a column too narrow for a sentence, issue 56).
    st.table(pd.DataFrame(rows).set_index("term"))
