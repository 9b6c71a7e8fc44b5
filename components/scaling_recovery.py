"""Distillation Recovery (Eq. 6) from F1 values the user measured before and after."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from workbench.scaling import recovery_rows

_FIELDS = (
    ("base", "F1 of the student before distillation"),
    ("teacher", "F1 of the teacher judge"),
    ("uniform", "F1 after training on uniform.jsonl"),
    ("headroom", "F1 after training on headroom.jsonl"),
)


def recovery_panel() -> None:
    """Four optional F1 inputs; with base, teacher and a distilled F1, a Recovery table."""
    st.subheader("Distillation recovery")
    st.caption(
        "Recovery = (F1(distilled) − F1(base)) / (F1(teacher) − F1(base)): the share of the "
        "teacher's gain a distilled student recovers (1 = as good as the teacher). Enter F1 "
        "measured on the same held-out cases; the training sets come from "
        "`workbench scaling select`."
    )
    columns = st.columns(len(_FIELDS))
    values = {
        name: column.number_input(label, 0.0, 1.0, value=None, step=0.01, format="%.3f",
                                  key=f"scaling_f1_{name}")
        for column, (name, label) in zip(columns, _FIELDS, strict=True)
    }
    distilled = {n: values[n] for n in ("uniform", "headroom") if values[n] is not None}
    if values["base"] is None or values["teacher"] is None or not distilled:
        st.caption("Give the base and teacher F1 and at least one distilled F1 to see Recovery.")
        return
    try:
        rows = recovery_rows(values["base"], values["teacher"], distilled)
    except ValueError as exc:
        st.warning(str(exc))
        return
    st.dataframe(pd.DataFrame(rows).round(3), hide_index=True, width="stretch", key="scaling_recovery")
