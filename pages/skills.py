"""Skills: the SKILLs in the store, their statistics and rule tables."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.rules import rules_frame
from components.state import engine
from store import repo
from workbench.stats import skill_stats

st.title("Skills")
eng = engine()
names = repo.skill_names(eng)
if not names:
    st.info("No SKILLs in the store yet. Import an index: `workbench import fixtures/demo/index.json`.")
    st.stop()

rows = []
skills = {}
for name in names:
    latest = repo.get_version(eng, name)
    skill = repo.load_skill(eng, name)
    skills[name] = skill
    s = skill_stats(skill)
    rows.append({
        "skill": name, "version": latest.version, "rules": s.rules, "edges": s.edges,
        "coupling I_c": round(s.coupling, 3), "max depth": s.max_depth, "cycle": s.has_cycle,
        "density I_d": round(s.density, 3), "complexity C": round(s.complexity, 4),
        "source tokens": s.source_tokens, "description": skill.description,
    })
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
total = skill_stats(list(skills.values()))
c1, c2, c3, c4 = st.columns(4)
c1.metric("SKILLs", len(names))
c2.metric("Rules", total.rules)
c3.metric("Edges", total.edges)
c4.metric("Complexity C (all)", f"{total.complexity:.4f}")

chosen = st.selectbox("Rules of", names, key="skills_pick")
vers = repo.versions(eng, chosen)
st.caption(" · ".join(f"v{v.version} by {v.created_by} ({v.note or 'no note'})" for v in vers))
st.dataframe(rules_frame(skills[chosen]), hide_index=True, width="stretch")
