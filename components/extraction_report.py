"""The extraction report of one SKILL version on the Skills page: what may be missing first
(answers at the rule cap, failed pieces), then the full report."""

from __future__ import annotations

import streamlit as st

from components.metric_row import metric_row
from components.safe import md
from workbench.words import percent, plural


def report_panel(report: dict, version: int) -> None:
    """Warnings a policy author must see without opening the JSON, then the JSON itself."""
    blocks = report.get("blocks", [])
    capped = [b for b in blocks if b.get("capped")]
    if capped:
        st.warning(md(
            f"{plural(len(capped), 'block')} of v{version} hit the extractor's rule cap and could not be "
            "split, so rules may be missing: " + ", ".join(str(b.get("key")) for b in capped[:8])
            + ". Re-extract with a larger max_tokens for the extractor."
        ))
    failed = [b for b in blocks if b.get("error")]
    if failed:
        st.warning(md(f"{plural(len(failed), 'block')} of v{version} "
                      f"{'is' if len(failed) == 1 else 'are'} incomplete: "
                      + "; ".join(f"{b.get('key')}: {b.get('error')}" for b in failed[:5])))
    splits = sum(int(b.get("cap_splits", 0)) for b in blocks)
    if splits:
        st.caption(md(f"{plural(splits, 'answer')} reached the rule cap and "
                      f"{'was' if splits == 1 else 'were'} asked again in halves."))
    non_rules = report.get("non_rules", [])
    if non_rules:
        st.caption(md(f"{plural(len(non_rules), 'proposed rule')} carried no obligation "
                      "(headings, lead-in lines, examples, attribute lists, lists of what the "
                      "agent can help with) and were left out: they are listed below."))
        with st.expander(f"Left out as not rules ({len(non_rules)})"):
            st.dataframe([{"text": str(n.get("quote", "")), "why left out": str(n.get("reason", ""))}
                          if isinstance(n, dict) else {"text": str(n), "why left out": ""}
                          for n in non_rules], hide_index=True, width="stretch")
    proposed = report.get("proposed_edges", 0)
    if proposed:
        st.caption(md(f"{plural(proposed, 'edge')} suggested by the text "
                      f"{'waits' if proposed == 1 else 'wait'} for review on the Graph page."))
    with st.expander(f"Extraction report of v{version}"):
        st.json(report, expanded=False)


def reference_panel(skill, reference_path: str) -> None:
    """Rule and edge figures of the shown SKILL against the reference graph of the same name
    in ``reference_path`` (a skillcdg/1 file), when there is one; nothing otherwise."""
    from pathlib import Path

    from workbench.extract.evaluate import evaluate_skill
    from workbench.graph import IndexValidationError, PolicyIndex

    path = Path(reference_path)
    if not path.is_file():
        return
    try:
        reference = PolicyIndex.load(path)
    except (OSError, IndexValidationError) as exc:
        st.warning(md(f"The reference graphs in {path} could not be read: {exc}"))
        return
    if skill.name not in reference.skills:
        return
    ev = evaluate_skill(skill, reference[skill.name], path_credit=True)
    plain = evaluate_skill(skill, reference[skill.name])
    f, g = plain.figures(), ev.figures()

    pct = percent  # "83%", "–" where a figure does not apply
    st.markdown(md(f"Against the reference graph in {path.name}"))
    metric_row([
        ("Rule recall", pct(f["rule_recall"])),
        ("Rule precision", pct(f["rule_precision"])),
        ("Span exactness", pct(f["span_exactness"])),
        ("Modality agreement", pct(f["modality_agreement"])),
        ("Edge F1", pct(f["edge_f1"]), "Over matched rule pairs: an edge counts when its two "
         "rules match the two rules of a reference edge."),
        ("Edge F1, paths", pct(g["edge_f1"]),
         "An edge also counts when a reference path connects its rules."),
    ], key="skills_reference_figures")
    if plain.unmatched_reference:
        st.caption(md("Reference rules no extracted rule covers: "
                      + ", ".join(plain.unmatched_reference[:20])))
