"""Rule tables as pandas frames (Streamlit escapes cell text itself), with a link from each
rule to its view on the Graph page (issue #16: every rule id links to its view)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from components.links import graph_link
from workbench.graph import SkillGraph

# The "open" column of a rule table: the link shows as a short word, so the id column stays
# plain text that sorts and reads as it is.
RULE_LINK_CONFIG = {"open": st.column_config.LinkColumn(
    "open", display_text="Graph ↗", help="Open this rule on the Graph page")}


def rules_frame(skill: SkillGraph, rule_ids: Iterable[str] | None = None) -> pd.DataFrame:
    ids = list(rule_ids) if rule_ids is not None else list(skill.graph.rules)
    rows = []
    for rid in ids:
        r = skill.graph.rules[rid]
        rows.append({
            "id": r.id,
            "modality": r.modality,
            "condition": r.condition,
            "action": r.action,
            "requires": ", ".join(skill.graph.requires(rid)),
            "source": skill.rule_text(rid),
        })
    return pd.DataFrame(rows, columns=["id", "modality", "condition", "action", "requires", "source"])


def with_rule_links(frame: pd.DataFrame, skill_name: str, id_column: str = "id",
                    version: int | None = None, skill_column: str | None = None) -> pd.DataFrame:
    """``frame`` plus an "open" column linking each row's rule to ``/graph?skill=&rule=``; the
    SKILL is ``skill_column``'s value when given (a table spanning SKILLs), else
    ``skill_name``. Show it with ``column_config=RULE_LINK_CONFIG``."""
    skills = frame[skill_column] if skill_column else [skill_name] * len(frame)
    return frame.assign(open=[graph_link(str(s), str(r), version)
                              for s, r in zip(skills, frame[id_column], strict=True)])
