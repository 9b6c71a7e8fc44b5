"""Issue 56 item 2 on the Graph page (AppTest, the demo store): what an edit does to the
audited cases, *before* it is saved. Reversing the action of MOR-S009 ("treat it as possibly
lost") lists the five stored cases whose audited closure holds it — the page used to say "No
stored case of demo changes closure", and only for saved versions; the table editor's unsaved
edits are checked the same way; the re-judge of a sample shows its estimate before any model
call; the comparison of saved versions follows the newest version."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo, repo
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
MOR = "merchant-order-refund"
HOLD_S009 = ["mor-001-delay-not-yet-late", "mor-002-delay-cancel-coupon-share",
             "mor-003-delay-premier-credit", "mor-008-lost-parcel-trace",
             "mor-009-refund-without-return-limit"]
REVERSED = "NEVER treat it as possibly lost"


@pytest.fixture
def db(demo_db):
    """The demo as `make demo` stores it: SKILLs, cases and the embedded judge's cdg traces."""
    from workbench.audit.trace_file import read_traces

    eng, _index, _cases = demo_db
    traces, problems = read_traces(DEMO / "traces_cdg.jsonl")
    assert not problems
    audit_repo.save_traces(eng, traces, "demo-cdg", "demo", actor=COMMAND_LINE)
    return eng


def _page(rule: str = "MOR-S009") -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=180)
    at.query_params["skill"] = MOR
    at.query_params["rule"] = rule
    at.session_state["identity"] = {"name": "pat", "role": "author"}
    return at.run()


def _table(at: AppTest, column: str):
    """st.dataframe keys do not reach AppTest: the table with this column."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_reversing_mor_s009_lists_the_five_cases_whose_closure_holds_it_before_saving(db):
    at = _page()
    assert not at.exception
    next(t for t in at.text_area if t.label == "Then (action)").set_value(REVERSED)
    at.button(key=f"graph_rule_check_{MOR}_1_MOR-S009").click().run()
    assert not at.exception
    # Beside the form: the count; below the drawing: the cases, each with its stored verdict.
    captions = [c.value.replace("\\", "") for c in at.caption]  # Markdown-escaped names
    assert any("**5 cases** of demo hold MOR-S009 in their closure" in c
               and "nothing is saved yet" in c for c in captions)
    table = _table(at, "closure holds")
    assert list(table["case"]) == HOLD_S009
    assert set(table["closure holds"]) == {"MOR-S009"}
    assert set(table["stored verdict"]) <= {"violation", "compliant"}
    assert any("against version 1, not saved: MOR-S009 — action changed" in c for c in captions)
    # The re-judge offer says what it costs before it runs (nothing measured in a fresh store).
    assert any("5 judge calls" in c and "nothing is stored" in c for c in captions)
    # Nothing was saved, and the form still holds the draft: Save rule saves what was checked.
    assert [v.version for v in repo.versions(db, MOR)] == [1]
    assert next(t for t in at.text_area if t.label == "Then (action)").value == REVERSED
    next(b for b in at.button if b.label == "Save rule MOR-S009").click().run()
    assert repo.load_skill(db, MOR).graph.rules["MOR-S009"].action == REVERSED


def test_an_unchanged_form_says_there_is_nothing_to_check(db):
    at = _page()
    at.button(key=f"graph_rule_check_{MOR}_1_MOR-S009").click().run()
    assert any("holds no change to MOR-S009" in i.value.replace("\\", "") for i in at.info)
    assert not any("closure holds" in d.value.columns for d in at.dataframe)


def test_the_tables_unsaved_edits_are_checked_before_saving(db):
    at = _page()
    rows = [r.id for r in repo.load_skill(db, MOR).graph.rules.values()]
    at.session_state[f"rules_editor_{MOR}_1"] = {
        "edited_rows": {rows.index("MOR-S009"): {"action": REVERSED}},
        "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert list(_table(at, "closure holds")["case"]) == HOLD_S009
    assert [v.version for v in repo.versions(db, MOR)] == [1]


def test_compare_with_version_follows_the_newest_version(db):
    skill = repo.load_skill(db, MOR)
    for n in (2, 3):  # two saved edits of MOR-S009's action
        rules = [r if r.id != "MOR-S009" else type(r)(**{**r.__dict__, "action": f"edit {n}"})
                 for r in skill.graph.rules.values()]
        from workbench.graph import RuleGraph, SkillGraph

        skill = SkillGraph(skill.name, skill.description, skill.source,
                           RuleGraph(rules, skill.graph.edges))
        repo.save_skill(db, skill, author="pat", note=f"v{n}", actor=COMMAND_LINE,
                        base_version=n - 1)
    at = _page()
    assert at.selectbox(key=f"impact_base_{MOR}_3").value == 2
    at.button(key="impact_find").click().run()
    assert list(_table(at, "closure holds")["case"]) == HOLD_S009
    # A new version is saved: the comparison is version 4 against 3, not the old pair.
    next(t for t in at.text_area if t.label == "Then (action)").set_value("edit 4")
    next(b for b in at.button if b.label == "Save rule MOR-S009").click().run()
    assert at.selectbox(key="graph_version").value == 4
    assert at.selectbox(key=f"impact_base_{MOR}_4").value == 3
