"""Graph: one SKILL's CDG, drawn legibly at any size, with the chosen rule edited beside it;
proposed edges decided one key each or many at once; versions compared; edit impact."""

from __future__ import annotations

import streamlit as st

from components import identity, links, queue_nav
from components.errors import show_error
from components.graph_view import provenance_legend
from components.safe import md
from pages import _graph_focus, _graph_impact, _graph_versions
from pages._graph_proposals import proposals_panel, provenance_filter
from pages._state import engine, user_name
from store import repo
from workbench.audit import AuditOptions
from workbench.audit.policy_context import ContextOptions
from workbench.graph.editing import apply_edits
from workbench.identity.roles import NotAllowed
from workbench.vocabulary import Seeding
from workbench.words import arrows

IMPACT_SEEDING = {"scored (as audits run)": Seeding.SCORED.value, "keyword match": Seeding.KEYWORDS.value}

st.title("Graph")
eng = engine()
names = repo.skill_names(eng)
if not names:
    st.info("No SKILLs in the store yet. Import an index: `workbench import fixtures/demo/index.json`.")
    st.stop()

left, right = st.columns([1, 1])
# ?skill=&version=&rule= : reload, back and shared links open this same rule (issue #16).
missing_skill = links.adopt("skill", "graph_skill", names)
name = left.selectbox("SKILL", names, key="graph_skill")
links.publish("skill", name)
if missing_skill:
    st.warning(md(f"The link names SKILL “{missing_skill}”, which is not stored; showing {name}."))
vers = [v.version for v in repo.versions(eng, name)]
latest = vers[-1]
# A widget's value can only be set before it is drawn: a save parks the new version here.
if "graph_show_version" in st.session_state:
    st.session_state["graph_version"] = st.session_state.pop("graph_show_version")
elif (st.session_state.get("graph_version_of") != name
      or st.session_state.get("graph_version") not in vers):
    # Another SKILL (or a version that is gone): open its latest version. A kept "1" from the
    # previous SKILL made authors edit an old version without noticing (issue #16).
    st.session_state["graph_version"] = latest
st.session_state["graph_version_of"] = name
missing_version = links.adopt("version", "graph_version", vers)
version = right.selectbox("Version", vers[::-1], key="graph_version")
# Only a pinned older version goes into the address: a plain link keeps opening the latest.
links.publish("version", None if version == latest else version)
if missing_version:
    st.warning(md(f"The link names version {missing_version} of {name}, which does not exist; "
                  f"showing version {version}."))
skill = repo.load_skill(eng, name, version)  # with provenance, proposals and verdicts
if version != latest:
    st.warning(md(f"You are viewing version {version}, not the latest ({latest}). Saving an edit "
                  f"made here is refused, because it would undo what versions after {version} "
                  f"changed; switch to version {latest} to edit, or explicitly restore from this "
                  "version below."), icon=":material/warning:")

kinds = provenance_filter(skill, key=f"graph_provenance_{name}")
provenance_legend()
author = identity.acting_name("Your name", "graph_author", user_name())
_graph_focus.focus(eng, skill, version, latest,
                  kinds if (skill.graph.edges or skill.proposed) else None, author)

decided = proposals_panel(eng, skill, version, identity.actor(author))
if decided is not None:
    st.session_state["graph_show_version"] = decided
    st.rerun()

_graph_versions.compare(eng, name, vers, version)

# -- every rule and edge as tables -------------------------------------------------------------
st.divider()
st.subheader("Edit all rules and edges")
st.caption("Edit condition, action or modality in place; add or delete rule rows, delete edge "
           "rows or change their ends (add an edge with the pickers beside the drawing). Saving "
           "validates everything and creates a new version; older versions stay readable.")
rule_rows = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
             for r in skill.graph.rules.values()]
edge_rows = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
edited_rules = st.data_editor(
    rule_rows, num_rows="dynamic", key=f"rules_editor_{name}_{version}", width="stretch",
    column_config={"modality": st.column_config.SelectboxColumn(
        "modality", options=["required", "prohibited", "permitted"], required=True)},
)
rule_options = [r["id"] for r in edited_rules if r.get("id")]
edited_edges = st.data_editor(
    edge_rows, num_rows="delete", key=f"edges_editor_{name}_{version}", width="stretch",
    column_config={
        "source": st.column_config.SelectboxColumn("source (requires →)", options=rule_options),
        "target": st.column_config.SelectboxColumn("target (prerequisite)", options=rule_options),
    },
)
note = st.text_input("What and why (optional)", key=f"graph_note_{name}_{version}")
restore = False
if version != latest:
    restore = st.checkbox(f"Restore from version {version}: the new version replaces the "
                          f"changes made in versions after {version}", key=f"graph_restore_{name}")
may_edit = identity.permitted("edit graphs")
if st.button("Save as new version", type="primary", key="graph_save", disabled=not may_edit):
    result = apply_edits(skill, edited_rules, edited_edges)
    # Empty rows are left out, never without a word (here, and in the message after a save).
    left_out = "".join(f" Not saved: {skipped}." for skipped in result.skipped)
    if left_out:
        st.info(md(left_out.strip()))
    if not result.ok:
        st.error("Nothing was saved. Fix these and save again:\n\n"
                 + "\n".join(f"- {md(str(p))}" for p in result.problems))
    elif result.summary == "no changes" and not restore:
        st.info("No changes to save.")
    else:
        # The version the edit was built on: the store refuses it if it is no longer the
        # latest (an old version selected, or another author saved meanwhile). Restoring
        # says "on top of the latest" explicitly, and says so in the note.
        built_on = latest if restore else version
        restored = f"restored from version {version}" if restore else ""
        try:
            saved = repo.save_skill(eng, result.skill, author=author or "analyst",
                                    note="; ".join(x for x in (restored, note) if x),
                                    base_version=built_on, actor=identity.actor(author),
                                    trust=True)
        except NotAllowed as refused:  # the store checks the role too
            show_error(refused)
        except repo.StaleVersion as stale:
            st.error(md(f"Nothing was saved: this edit was made on version {stale.base}, but "
                        f"version {stale.latest} is the latest. Saving would undo what changed "
                        f"since: {arrows(stale.changes)}. Switch to version {stale.latest} and make the "
                        "edit there."))
        else:
            summary = (f"{restored}; " if restored else "") + arrows(result.summary)
            queue_nav.leave_flash("graph_table_saved", "success",
                                  f"Saved version {saved.version}: {summary}.{left_out}")
            st.session_state["graph_show_version"] = saved.version
            st.rerun()
queue_nav.show_flash("graph_table_saved")

_graph_versions.history(eng, name)

# -- edit impact ---------------------------------------------------------------------------
st.divider()
st.subheader("Edit impact")
st.caption("What an edit does to your audited cases, before you save it: the stored cases whose "
           "closure holds a rule the edit changes, and those whose closure it changes. Beside "
           "a rule, “Check impact on audited cases” checks that rule's edit; here, the unsaved "
           "edits of the tables above, or a saved version against an earlier one.")
datasets = _graph_impact.audited_datasets(eng, name)
table_draft = apply_edits(skill, edited_rules, edited_edges)
has_draft = table_draft.ok and table_draft.summary != "no changes"
older = [v for v in vers if v < version]
CHECK_DRAFT, CHECK_SAVED = "the unsaved edits in the tables above", "a saved version"
checks = ([CHECK_DRAFT] if has_draft else []) + ([CHECK_SAVED] if older else [])
if not datasets:
    st.caption("No stored cases yet (`workbench import-cases ...`): nothing to check.")
elif not checks:
    st.caption("Edit a rule or an edge (beside the drawing or in the tables above) to check "
               "it here; saved versions compare once the SKILL has two.")
else:
    c1, c2, c3 = st.columns(3)
    check = c1.radio("Check", checks, key="impact_check") if len(checks) > 1 else checks[0]
    impact_ds = c2.selectbox("Stored cases of", datasets, key="impact_dataset")
    # Scored seeding (what audits use) fills a token target, so on a small SKILL every rule is
    # in context and no edge edit changes it; keyword seeding shows what the edges alone change.
    seeding = c3.radio("Seeding", list(IMPACT_SEEDING), key="impact_seeding",
                       help="How the closure of a case is computed where the edit changes "
                            "edges or the case has no stored trace. Scored: the seeds the "
                            "audit uses by default (they fill a token target). Keyword match: "
                            "seeds from the case's keywords only, so the closure shows what "
                            "the require edges change.")
    impact_opts = AuditOptions(judge_mode="none",
                               context=ContextOptions(seeding=IMPACT_SEEDING[seeding]))
    if check == CHECK_DRAFT:
        _graph_impact.show(eng, _graph_impact.Draft(skill, version, table_draft.skill, CHECK_DRAFT),
                           impact_ds, key="impact_draft", options=impact_opts)
    else:
        # Keyed by the version shown: after a save the comparison follows the newest version
        # (the version before it), never an old pair kept by the widget (issue 56 item 2).
        base = st.selectbox("Compare with version", older[::-1], key=f"impact_base_{name}_{version}",
                            format_func=lambda v: f"version {v}")
        if st.button(f"Find the cases version {version} reaches", key="impact_find"):
            st.session_state["impact"] = (name, version, base, impact_ds, seeding)
        if st.session_state.get("impact") == (name, version, base, impact_ds, seeding):
            _graph_impact.show(eng, _graph_impact.Draft(
                repo.load_skill(eng, name, base), base, skill, f"version {version}", saved=True,
                rules=f"version {version}"), impact_ds, key="impact_saved", options=impact_opts)
