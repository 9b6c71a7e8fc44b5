"""Annotate: rule correctness, reference inventories and CDG inspection, blind, with
adjudication, progress, agreement and the dataset report (SkillCDG appendix B.4).

Each task's section is a ``components/annotate_*`` module; this script signs the annotator
in and shows the section of the chosen task."""

from __future__ import annotations

import streamlit as st

from components.annotate_correctness import rule_correctness
from components.annotate_inspection import inspection_panel
from components.annotate_queue import pick_skill_version
from components.annotate_reference import reference_panel
from components.annotate_report import progress_panel, report_panel
from components.annotate_session import sign_in_form, signed_in, signed_in_bar
from components.state import engine

MODES = ("Rule correctness", "Reference inventory", "CDG inspection", "Progress & agreement",
         "Dataset report")

st.title("Annotate")
eng = engine()

who = signed_in()
if who is None:
    sign_in_form(eng)
    st.stop()

signed_in_bar(who)
mode = st.radio("Task", MODES, horizontal=True, key="ann_mode")

if mode in ("Rule correctness", "Reference inventory", "Progress & agreement"):
    skill, version = pick_skill_version(eng)
    if mode == "Rule correctness":
        rule_correctness(eng, skill, version)
    elif mode == "Reference inventory":
        reference_panel(eng, skill)
    else:
        progress_panel(eng, skill, version)
elif mode == "CDG inspection":
    inspection_panel(eng)
else:
    report_panel(eng)
