"""SkillCDG Workbench: the Streamlit entry point (``workbench ui`` starts it)."""

from __future__ import annotations

import streamlit as st

from components import identity
from components.narrow_window import fold_sidebar_when_narrow
from pages._sign_in import backend
from workbench import extras

st.set_page_config(page_title="SkillCDG Workbench", layout="wide")

SKILLS = st.Page("pages/skills.py", title="Skills", url_path="skills")


def _start() -> None:
    # Streamlit serves the default page at "/" only, so a default Skills page made "/skills"
    # a "Page not found" (issue #16). The root now forwards to /skills, its one address.
    st.switch_page(SKILLS)


PAGES = {
    "Policies": [
        st.Page(_start, title="Start", url_path="start", default=True, visibility="hidden"),
        SKILLS,
        st.Page("pages/graph.py", title="Graph", url_path="graph"),
    ],
    "Audit": [
        st.Page("pages/replay.py", title="Replay", url_path="replay"),
        st.Page("pages/review.py", title="Review", url_path="review"),
        st.Page("pages/evaluate.py", title="Evaluate", url_path="evaluate"),
    ],
    "Annotation": [
        st.Page("pages/annotate.py", title="Annotate", url_path="annotate"),
    ],
    # The research lab's pages exist where the lab is installed (pip install '.[lab]').
    **({"Analysis": [
        st.Page("pages/studies.py", title="Studies", url_path="studies"),
        st.Page("pages/scaling.py", title="Scaling", url_path="scaling"),
    ]} if extras.installed("lab") else {}),
    "Procedures": [
        st.Page("pages/contracts.py", title="Contracts", url_path="contracts"),
    ],
    "Workbench": [
        st.Page("pages/settings.py", title="Settings", url_path="settings"),
        st.Page("pages/glossary.py", title="Glossary", url_path="glossary"),
    ],
}

navigation = st.navigation(PAGES)
sign_in = backend()
identity.establish(sign_in)  # who this run is for: before any page asks
identity.sidebar(sign_in)  # after st.navigation, so the sign-in box sits below the page list
with st.sidebar:
    fold_sidebar_when_narrow()  # below 1,000 px the page gets the window (issue 56)
navigation.run()
