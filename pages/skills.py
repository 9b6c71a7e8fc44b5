"""Skills: upload and extract SKILLs, their versions, statistics, reports and rule tables."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from components import identity, queue_nav
from components.errors import show_error
from components.extraction_report import reference_panel, report_panel
from components.glossary import column_help
from components.metric_row import metric_row
from components.rules import RULE_LINK_CONFIG, rules_frame, with_rule_links
from components.safe import md
from components.start_here import show_start_here
from pages._start import start_summary
from pages._state import engine, model_gateway, user_name
from store import edge_decisions, repo
from store.extraction import SqlStepStore
from workbench.extract import SkillSourceError, extract_skill, load_sources
from workbench.extract.blocks import plan_blocks
from workbench.graph.stats import skill_stats
from workbench.identity.roles import NotAllowed
from workbench.inputs import decode_text
from workbench.settings import REFERENCE_INDEX
from workbench.skill.document import parse_skill
from workbench.skill.upload import (
    CONFIRM_ABOVE_SECONDS,
    describe_duration,
    extraction_seconds,
    public_text,
    screen_upload,
)
from workbench.words import help_for, number, plural


def extraction_estimate(uploads: list, max_block: int) -> str | None:
    """What pressing Extract will take, from the uploaded SKILL.md files' blocks, or None
    when a file does not parse (the press then says what is wrong with it)."""
    n_blocks = 0
    for f in uploads:
        if not f.name.lower().endswith(".md"):
            return None
        try:
            n_blocks += len(plan_blocks(parse_skill(decode_text(f.getvalue(), f.name)[0], f.name),
                                        max_block))
        except Exception:  # an estimate only: Extract reports the problem itself
            return None
    return (f"Extract reads {plural(n_blocks, 'block')}: "
            f"{describe_duration(extraction_seconds(n_blocks))} on the embedded model "
            "(a first start of the model adds about a minute).")

DEMO_REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "index.json"

st.title("Skills")
eng = engine()
decided, decided_help = start_summary(eng)  # what is decided now, and by which setting
show_start_here(first_visit=not st.session_state.setdefault("start_here_seen", False),
                decided=decided, decided_help=decided_help)
st.session_state["start_here_seen"] = True
queue_nav.show_flash("skills_deleted")  # a deletion says what it did, above everything else

# Extracting a SKILL saves a graph version and deleting one hides every version: both edit
# graphs, so they need the role that saving a graph edit needs.
may_edit = identity.allowed("edit graphs")

with st.expander("Upload SKILLs and extract their rule graphs", expanded=not repo.skill_names(eng)):
    if not may_edit:
        identity.explain_refusal("edit graphs")
    uploads = st.file_uploader("SKILL.md files or .zip archives (a folder per SKILL)",
                               type=["md", "zip"], accept_multiple_files=True, key="skills_upload",
                               disabled=not may_edit)
    max_block = st.number_input("Block size (tokens per extractor call)", 200, 12000, 1200,
                                step=100, key="skills_max_block",
                                help=help_for("largest block")
                                + " Longer blocks are split at paragraph boundaries.")
    # Junk is refused before any model call (an empty or binary .md became a 0-rule SKILL).
    refused = {f.name: problem for f in uploads or [] if f.name.lower().endswith(".md")
               and (problem := screen_upload(f.name, f.getvalue()))}
    for problem in refused.values():
        st.error(md(f"{problem} Nothing was saved from it."))
    uploads = [f for f in uploads or [] if f.name not in refused]
    signature = tuple((f.name, f.size, int(max_block)) for f in uploads)
    big_job = st.session_state.get("skills_big_job")
    confirmed = False
    if big_job and big_job[0] == signature:
        st.warning(md(big_job[1]))
        confirmed = st.checkbox("Extract anyway", key="skills_confirm_big")
    if uploads and may_edit and (estimate := extraction_estimate(uploads, int(max_block))):
        st.caption(estimate)  # before the press: the time is known before the model starts
    if uploads and may_edit and st.button("Extract", type="primary", key="skills_extract"):
        uploaded: dict[str, str] = {}  # temp path -> the uploaded file's name, for messages
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, f in enumerate(uploads):
                # One folder per upload keeps two files both called SKILL.md apart.
                target = Path(tmp) / f"{i:03d}" / Path(f.name).name
                target.parent.mkdir(parents=True)
                target.write_bytes(f.getvalue())
                paths.append(target)
                uploaded[str(target)] = f.name
            uploaded[tmp] = "upload"
            try:
                docs = load_sources(paths)
            except SkillSourceError as exc:
                st.error(md(f"Nothing was extracted: {public_text(str(exc), uploaded)}"))
                docs = []
        try:  # a name that looks like a stored SKILL's is refused before the model runs
            repo.check_new_names(eng, [doc.name for doc in docs])
        except repo.LookAlikeName as exc:
            show_error(exc)
            docs = []
        n_blocks = sum(len(plan_blocks(doc, int(max_block))) for doc in docs)
        seconds = extraction_seconds(n_blocks)
        if docs and seconds > CONFIRM_ABOVE_SECONDS and not confirmed:
            st.session_state["skills_big_job"] = (signature, (
                f"This extraction is big: {n_blocks} blocks, {describe_duration(seconds)} on the "
                "embedded model. Tick “Extract anyway” and press Extract again to start it, or "
                "upload a smaller SKILL (or raise the block size)."))
            st.rerun()
        if docs:
            st.caption(f"{plural(n_blocks, 'block')} to read, {describe_duration(seconds)} on "
                       "the embedded model. Stop halts it: finished blocks are kept and Extract "
                       "again resumes.")
        gateway = model_gateway()
        steps = SqlStepStore(eng)
        for doc in docs:
            for w in doc.warnings:
                st.warning(md(public_text(w, uploaded)))
            # The first minute or so is the model loading: say so rather than show an empty bar.
            bar = st.progress(0.0, text=md(f"{doc.name}: starting the model…"))

            def on_step(p, bar=bar, name=doc.name):
                label = f"{name}: {p.phase} {p.done}/{p.total}"
                if p.section or p.block:
                    label += f" — {'cached' if p.cached else 'read'} block '{p.section or p.block}'"
                bar.progress(p.fraction, text=md(label))

            try:
                # An author's earlier accept/reject verdicts on this SKILL's edges still hold.
                graph, report = extract_skill(doc, gateway, steps, progress=on_step,
                                              max_block_tokens=int(max_block),
                                              decisions=edge_decisions.load_edge_decisions(eng, doc.name))
            except Exception as exc:  # the model is unreachable or a prompt is broken
                st.error(md(f"{doc.name}: extraction stopped: {public_text(str(exc), uploaded)}. "
                            "Finished blocks are kept; press Extract again to resume."))
                continue
            try:
                saved = repo.save_skill(eng, graph, author=user_name(), note="extracted",
                                        report=report.to_dict(), actor=identity.actor(),
                                        trust=True)  # provenance, in the version's transaction
            except (NotAllowed, repo.LookAlikeName) as exc:  # the store checks these too
                show_error(exc)
                continue
            state = f"version {saved.version}" if saved.created else "unchanged (same as latest)"
            st.success(md(f"{doc.name}: {len(graph.graph)} rules, {len(graph.graph.edges)} edges "
                          f"— {state}"))

names = repo.skill_names(eng)
if not names:
    st.info("No SKILLs in the store yet. Upload one above, or import an index: "
            "`workbench import fixtures/demo/index.json`.")
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
        "coupling": number(s.coupling, 3), "max depth": s.max_depth,
        "cycle": "yes" if s.has_cycle else "no", "density": number(s.density, 3),
        "complexity": number(s.complexity, 3), "source tokens": s.source_tokens,
        "description": skill.description,
    })
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
             column_config=column_help(rows[0] if rows else ()))
st.caption("Density = tokens of the rules' conditions and actions ÷ tokens of the SKILL source "
           "(cl100k tokenizer); coupling = edges ÷ rules; complexity = density × coupling.")
total = skill_stats(list(skills.values()))
metric_row([
    ("SKILLs", number(len(names))),
    ("Rules", number(total.rules)),
    ("Edges", number(total.edges)),
    ("Complexity, all SKILLs", number(total.complexity, 3), help_for("complexity")),
], key="skills_totals")

chosen = st.selectbox("Rules of", names, key="skills_pick")
vers = repo.versions(eng, chosen)
st.caption(md(" · ".join(f"v{v.version} by {v.created_by} ({v.note or 'no note'})" for v in vers)))
st.dataframe(with_rule_links(rules_frame(skills[chosen]), chosen), hide_index=True,
             width="stretch", column_config=RULE_LINK_CONFIG)

latest = vers[-1]
if latest.report_json:
    report_panel(json.loads(latest.report_json), latest.version)
# A hand-built reference graph of the same SKILL, when one exists, measures this version.
reference_panel(skills[chosen], REFERENCE_INDEX.read(default=str(DEMO_REFERENCE)))

with st.expander(f"Delete {chosen}"):
    st.caption("Hides every version (rows stay for the audit trail). Re-upload to extract again.")
    if not may_edit:
        identity.explain_refusal("edit graphs")
    if st.button(f"Delete {chosen}", key="skills_delete", disabled=not may_edit) and may_edit:
        try:
            hidden = repo.delete_skill(eng, chosen, actor=identity.actor())
        except NotAllowed as exc:  # the store checks the role too
            show_error(exc)
        else:
            queue_nav.leave_flash("skills_deleted", "success",
                                  f"Deleted {chosen}: {plural(hidden, 'version')} hidden "
                                  "(kept for the audit trail).")
            st.rerun()
