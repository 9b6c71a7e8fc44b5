"""Studies (the research lab): the retrieval-coverage and SKILL-length results of
`workbench evaluate`, and training runs. Registered in ``app.py`` only where the lab is
installed (``pip install '.[lab]'``); the product's own figures stay on Evaluate."""

from __future__ import annotations

import streamlit as st

from components.lab.retrieval_curves import show_evaluations
from components.lab.sweep_accuracy import show_sweep_accuracy
from components.lab.training_runs import training_section

st.title("Studies")
st.caption("The research lab's results: how much of the governing policy each way of reading "
           "it puts before the judge, how the verdicts hold up as SKILLs grow, and the "
           "training runs of the keyworder and the judge. Hover a column header for what it "
           "means, or see the Glossary.")
with st.container(border=True):
    show_evaluations()
    show_sweep_accuracy()

training_section("ev_train")
