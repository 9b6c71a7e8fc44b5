"""Rule tables as pandas frames (Streamlit escapes cell text itself)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from workbench.graph import SkillGraph


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
