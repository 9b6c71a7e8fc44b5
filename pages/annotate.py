"""Annotate: rule correctness, reference inventories and CDG inspection, blind, with
adjudication, progress, agreement and the dataset report (the first paper's appendix B.4).

Each task's section is a page-private ``pages/_annotate_*`` module (they read and write the
annotation store; ``components/`` only draws). The annotator is whoever is signed in in the
sidebar (``components.identity``), with a role that may label."""

from __future__ import annotations

import streamlit as st

from pages._annotate_correctness import rule_correctness
from pages._annotate_inspection import inspection_panel
from pages._annotate_queue import pick_skill_version
from pages._annotate_reference import reference_panel
from pages._annotate_report import progress_panel, report_panel
from pages._annotate_session import require_annotator, signed_in_caption
from pages._state import engine

MODES = ("Rule correctness", "Reference inventory", "CDG inspection", "Progress & agreement",
         "Dataset report")

st.title("Annotate")
eng = engine()

who = require_annotator(eng)
signed_in_caption(who)
mode = st.radio("Task", MODES, horizontal=True, key="ann_mode")

if mode in ("Rule correctness", "Reference inventory", "Progress & agreement"):
    skill, version = pick_skill_version(eng)
    if mode == "Rule correctness":
        rule_correctness(eng, skill, version, who)
    elif mode == "Reference inventory":
        reference_panel(eng, skill, who)
    else:
        progress_panel(eng, skill, version, who)
elif mode == "CDG inspection":
    inspection_panel(eng, who)
else:
    report_panel(eng, who)
