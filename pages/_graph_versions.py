"""Graph page: compare any two versions of a SKILL (rules added, removed and changed field
by field, edges added and removed), and the edit history, whose summary is what each change
did (computed) with the author's note beside it as a note (issue 35 item 3)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from components.safe import md
from store import repo
from workbench.graph.diff import GraphDiff, describe, diff_skills
from workbench.words import arrows


def compare(eng: Engine, name: str, numbers: list[int], shown: int) -> None:
    with st.expander("Compare versions", expanded=bool(st.session_state.get("graph_compare_open"))):
        if len(numbers) < 2:
            st.caption("Only one version so far: a save or an accepted proposal makes another.")
            return
        c1, c2 = st.columns(2)
        newer = [n for n in numbers if n != numbers[0]]
        new = c2.selectbox("Newer version", newer[::-1], key=f"graph_diff_to_{name}",
                           index=newer[::-1].index(shown) if shown in newer else 0)
        older = [n for n in numbers if n < new]
        old = c1.selectbox("Older version", older[::-1], key=f"graph_diff_from_{name}")
        change = diff_skills(repo.load_skill(eng, name, old), repo.load_skill(eng, name, new))
        st.session_state["graph_compare_open"] = True
        st.markdown(f"**Version {old} → {new}:** " + md(arrows(change.summary())))
        rows = change_rows(change)
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch", key=f"graph_diff_table_{name}",
                         column_config={"change": st.column_config.TextColumn(
                             "change", help="added, removed or changed, in the newer version")})


def change_rows(change: GraphDiff) -> list[dict]:
    """One row per rule or edge change, field by field, in words."""
    rows = [{"change": "rule added", "what": r.id, "field": "",
             "before": "", "after": f"[{r.modality}] if {r.condition}: {r.action}"}
            for r in change.rules_added]
    rows += [{"change": "rule removed", "what": r.id, "field": "",
              "before": f"[{r.modality}] if {r.condition}: {r.action}", "after": ""}
             for r in change.rules_removed]
    rows += [{"change": "rule changed", "what": c.rule_id, "field": f.field,
              "before": describe(f.before), "after": describe(f.after)}
             for c in change.rules_changed for f in c.changes]
    rows += [{"change": "edge added", "what": f"{e.source} requires {e.target}", "field": "",
              "before": "", "after": e.provenance or ""} for e in change.edges_added]
    rows += [{"change": "edge removed", "what": f"{e.source} requires {e.target}", "field": "",
              "before": e.provenance or "", "after": ""} for e in change.edges_removed]
    rows += [{"change": "edge changed", "what": f"{c.pair[0]} requires {c.pair[1]}",
              "field": f.field, "before": describe(f.before), "after": describe(f.after)}
             for c in change.edges_changed for f in c.changes]
    return rows


def history(eng: Engine, name: str) -> None:
    with st.expander("Edit history"):
        entries = repo.edit_history(eng, name)
        if not entries:
            st.caption("No edits yet.")
            return
        st.caption("What changed is computed from the versions themselves; the note is what "
                   "the author wrote about it.")
        st.dataframe([{"when": h.created_at, "who": h.author, "from": h.from_version,
                       "to": h.to_version, "what changed": arrows(h.summary), "note": h.note}
                      for h in entries], hide_index=True, width="stretch")
