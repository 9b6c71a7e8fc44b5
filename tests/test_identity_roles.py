"""Identity and roles on the pages (issue #16, item 11): a signed-in annotator cannot save a
graph edit; an analyst may decide reviews but an author may not; nobody signed in locally is
single-user mode; deleting, extracting and edge decisions need the graph editor's role too."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.test_page_review import PAGE as REVIEW
from tests.test_page_review import db as review_db  # noqa: F401  (fixture)
from tests.test_page_skills_graph import db  # noqa: F401  (fixture)
from workbench.identity.roles import COMMAND_LINE

GRAPH = str(Path(__file__).resolve().parents[1] / "pages" / "graph.py")


def _as(page: str, role: str | None) -> AppTest:
    at = AppTest.from_file(page, default_timeout=60)
    if role:
        at.session_state["identity"] = {"name": f"the {role}", "role": role}
        at.session_state["user_name"] = f"the {role}"
    return at.run()


def test_annotator_cannot_save_a_graph_edit(db):  # noqa: F811
    at = _as(GRAPH, "annotator")
    assert not at.exception
    assert at.button(key="graph_save").disabled
    assert any("author or admin" in i.value.replace("\\", "") for i in at.info)


def test_author_and_single_user_mode_may_save(db):  # noqa: F811
    for role in ("author", None):
        at = _as(GRAPH, role)
        assert not at.button(key="graph_save").disabled, role


def test_analyst_decides_reviews_author_cannot(review_db):  # noqa: F811
    analyst = _as(REVIEW, "analyst")
    assert not analyst.exception
    assert not analyst.button(key="rv_confirm").disabled
    author = _as(REVIEW, "author")
    assert author.button(key="rv_confirm").disabled
    assert any("decide reviews" in i.value for i in author.info)


def test_analyst_cannot_change_settings():
    # The Settings page reads configuration files; changing settings is admin-only, and
    # pages that offer a change ask identity.allowed("change settings").
    script = ("import streamlit as st\nfrom components import identity\n"
              "st.text(str(identity.allowed('change settings')))\n")
    for role, expected in (("analyst", "False"), ("admin", "True")):
        at = AppTest.from_string(script)
        at.session_state["identity"] = {"name": "x", "role": role}
        assert at.run().text[0].value == expected


def test_signed_in_decisions_carry_the_identity_not_a_typed_name(review_db):  # noqa: F811
    """Issue #16 item 11: the reviewer was free text defaulting to "analyst". Signed in, there
    is no name field: the decision is recorded for the identity."""
    from store.review import decisions_for

    analyst = _as(REVIEW, "analyst")
    assert [t.key for t in analyst.text_input if t.key == "rv_reviewer"] == []
    assert any("the analyst" in c.value and "signed in" in c.value for c in analyst.caption)
    analyst.button(key="rv_confirm").click().run()
    assert not analyst.exception
    assert [d.reviewer for d in decisions_for(review_db, "demo")] == ["the analyst"]
    # Single-user mode (nobody signed in) keeps the typed name.
    assert [t.key for t in _as(REVIEW, None).text_input if t.key == "rv_reviewer"] == ["rv_reviewer"]


def test_signed_in_graph_author_is_the_identity(db):  # noqa: F811
    author = _as(GRAPH, "author")
    assert not author.exception
    assert [t.key for t in author.text_input if t.key == "graph_author"] == []
    assert any("the author" in c.value and "signed in" in c.value for c in author.caption)
    assert [t.key for t in _as(GRAPH, None).text_input if t.key == "graph_author"] == ["graph_author"]


def test_only_graph_editors_may_delete_a_skill_or_upload_one(db):  # noqa: F811
    """Deleting a SKILL and extracting new ones change graphs like a saved edit does, but the
    Skills page let any role do both (an analyst could delete every SKILL)."""
    skills = str(Path(__file__).resolve().parents[1] / "pages" / "skills.py")
    analyst = _as(skills, "analyst")
    assert not analyst.exception
    assert analyst.button(key="skills_delete").disabled
    assert any("edit graphs" in i.value for i in analyst.info)
    for role in ("author", "admin", None):
        at = _as(skills, role)
        assert not at.button(key="skills_delete").disabled, role
        assert not any("edit graphs" in i.value for i in at.info), role


def test_only_graph_editors_may_decide_a_proposed_edge(tmp_path, monkeypatch):
    """Accepting a proposed edge saves a new graph version: an annotator must not."""
    from store import edge_decisions, repo
    from store.db import make_engine
    from tests.test_page_graph_proposals import skill

    url = f"sqlite:///{tmp_path / 'graph.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    try:
        s = skill()
        v = repo.save_skill(eng, s, author="extract", actor=COMMAND_LINE).version
        edge_decisions.save_edge_trust(eng, "desk", v, s)
        annotator = _as(GRAPH, "annotator")
        assert annotator.button(key="edge_accept").disabled
        assert annotator.button(key="edge_reject").disabled
        assert not annotator.exception
        assert repo.versions(eng, "desk")[-1].version == v
        author = _as(GRAPH, "author")
        assert not author.button(key="edge_accept").disabled
        author.button(key="edge_accept").click().run()
        assert repo.versions(eng, "desk")[-1].version == v + 1
    finally:
        eng.dispose()


def test_annotator_cannot_import_cases_or_traces_on_review_analyst_can(review_db):  # noqa: F811
    """Issue #16: "Store cases", "Store traces" and "Audit" write what others read as verdicts
    and gold labels; an annotator finds them disabled with the reason, an analyst does not."""

    for role, disabled in (("annotator", True), ("analyst", False)):
        at = _as(REVIEW, role)
        at.radio(key="rv_cases_source").set_value("Upload a cases file").run()
        assert not at.exception, role
        assert at.button(key="rv_cases_store").disabled is disabled, role
        assert at.button(key="rv_traces_store").disabled is disabled, role
        reasons = " ".join(i.value for i in at.info)
        assert ("import cases you need the role analyst or reviewer or admin" in reasons) is disabled
        assert ("store audit results you need the role" in reasons) is disabled
