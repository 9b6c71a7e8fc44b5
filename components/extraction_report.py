"""The extraction report of one SKILL version on the Skills page: what may be missing first
(answers at the rule cap, failed pieces), then the full report."""

from __future__ import annotations

import streamlit as st

from components.safe import md


def report_panel(report: dict, version: int) -> None:
    """Warnings a policy author must see without opening the JSON, then the JSON itself."""
    blocks = report.get("blocks", [])
    capped = [b for b in blocks if b.get("capped")]
    if capped:
        st.warning(md(
            f"{len(capped)} block(s) of v{version} hit the extractor's rule cap and could not be "
            "split, so rules may be missing: " + ", ".join(str(b.get("key")) for b in capped[:8])
            + ". Re-extract with a larger max_tokens for the extractor."
        ))
    failed = [b for b in blocks if b.get("error")]
    if failed:
        st.warning(md(f"{len(failed)} block(s) of v{version} are incomplete: "
                      + "; ".join(f"{b.get('key')}: {b.get('error')}" for b in failed[:5])))
    splits = sum(int(b.get("cap_splits", 0)) for b in blocks)
    if splits:
        st.caption(md(f"{splits} answer(s) reached the rule cap and were asked again in halves."))
    with st.expander(f"Extraction report of v{version}"):
        st.json(report, expanded=False)
