"""Graph page and SKILL versions (issue #16, item 1): the editor opens the latest version,
says so loudly when an older one is shown, and never lets a save from an old version
silently undo later edits."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import audit_repo, repo
from store.db import make_engine
from workbench.audit.cases import case_from_dict
from workbench.graph import PolicyIndex
from workbench.graph.editing import apply_edits
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
EDGE_DROPPED_IN_V2 = ("R2", "R1")


def _save_edit(eng, name: str, base: int, *, drop=None, action=None) -> int:
    skill = repo.load_skill(eng, name, base)
    rules = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
             for r in skill.graph.rules.values()]
    if action:
        rules[0]["action"] = action
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges
             if (e.source, e.target) != drop]
    return repo.save_skill(eng, apply_edits(skill, rules, edges).skill, author="pat",
                           base_version=base, actor=COMMAND_LINE).version


@pytest.fixture
def db(tmp_path, monkeypatch, refund_index_data):
    """Two SKILLs with three versions each; v2 of each dropped the R2 -> R1 edge."""
    url = f"sqlite:///{tmp_path / 'versions.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    other = copy.deepcopy(refund_index_data["skills"][0])
    other["name"] = "returns"
    data = dict(refund_index_data, skills=[refund_index_data["skills"][0], other])
    repo.import_index(eng, PolicyIndex.from_dict(data), actor=COMMAND_LINE)
    for name in ("refunds", "returns"):
        assert _save_edit(eng, name, 1, drop=EDGE_DROPPED_IN_V2) == 2
        assert _save_edit(eng, name, 2, action="verify identity by phone") == 3
    yield eng
    eng.dispose()


def _page() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60).run()


def test_switching_skill_opens_its_latest_version(db):
    at = _page()
    assert at.selectbox(key="graph_skill").value == "refunds"
    assert at.selectbox(key="graph_version").value == 3
    at.selectbox(key="graph_version").set_value(1).run()
    at.selectbox(key="graph_skill").set_value("returns").run()
    assert not at.exception
    assert at.selectbox(key="graph_version").value == 3  # was stuck on 1
    assert not at.warning  # the latest version: no banner


def test_an_old_version_shows_a_banner_and_its_save_is_refused_with_the_diff(db):
    at = _page()
    at.selectbox(key="graph_version").set_value(1).run()
    assert any("not the latest (3)" in w.value.replace("\\", "") for w in at.warning)
    at.session_state["rules_editor_refunds_1"] = {
        "edited_rows": {3: {"action": "refund to the original card only"}},
        "added_rows": [], "deleted_rows": []}
    at.button(key="graph_save").click().run()
    assert not at.exception
    error = " ".join(e.value for e in at.error).replace("\\", "")
    assert "Nothing was saved" in error and "version 3 is the latest" in error
    assert "removed edges R2 → R1" in error and "edited rules R1" in error
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2, 3]
    latest = repo.load_skill(db, "refunds")
    assert EDGE_DROPPED_IN_V2 not in {(e.source, e.target) for e in latest.graph.edges}


def test_a_save_after_another_author_saved_is_refused(db):
    at = _page()
    assert at.selectbox(key="graph_version").value == 3
    _save_edit(db, "refunds", 3, action="verify identity in person")  # someone else, meanwhile
    at.session_state["rules_editor_refunds_3"] = {
        "edited_rows": {3: {"action": "refund to the original card only"}},
        "added_rows": [], "deleted_rows": []}
    at.button(key="graph_save").click().run()
    error = " ".join(e.value for e in at.error).replace("\\", "")
    assert "made on version 3" in error and "version 4 is the latest" in error
    assert repo.load_skill(db, "refunds").graph.rules["R1"].action == "verify identity in person"


def test_restoring_an_old_version_is_an_explicit_choice(db):
    at = _page()
    at.selectbox(key="graph_version").set_value(1).run()
    at.checkbox(key="graph_restore_refunds").check().run()
    at.button(key="graph_save").click().run()
    assert not at.exception
    assert [v.version for v in repo.versions(db, "refunds")] == [1, 2, 3, 4]
    v4 = repo.load_skill(db, "refunds", 4)
    assert EDGE_DROPPED_IN_V2 in {(e.source, e.target) for e in v4.graph.edges}
    # The restore is the author's act, said in the note; the summary is what the change did.
    entry = repo.edit_history(db, "refunds")[-1]
    assert "restored from version 1" in entry.note
    assert "added edges R2->R1" in entry.summary
    assert at.selectbox(key="graph_version").value == 4


def test_edit_impact_offers_every_older_version(db):
    audit_repo.save_cases(db, "ds", [case_from_dict(
        {"id": "c1", "model_response": "We refunded your card.", "skills": ["refunds"]}, "test")],
        actor=COMMAND_LINE)
    at = _page()
    assert not any("at least two versions" in c.value for c in at.caption)
    assert at.selectbox(key="impact_base_refunds_3").options == ["version 2", "version 1"]
