"""SkillCDG Workbench: the Streamlit entry point (``workbench ui`` or ``streamlit run app.py``)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="SkillCDG Workbench", layout="wide")

PAGES = [
    st.Page("pages/skills.py", title="Skills", url_path="skills", default=True),
    st.Page("pages/graph.py", title="Graph", url_path="graph"),
]

st.navigation(PAGES).run()
