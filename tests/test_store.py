from __future__ import annotations

import dataclasses

import pytest

from store import repo
from workbench.graph import PolicyIndex, Rule, RuleGraph, SkillGraph
from workbench.identity.roles import COMMAND_LINE


@pytest.fixture
def engine(store_engine):
    """Every test here runs on SQLite and on PostgreSQL (conftest ``store_url``)."""
    return store_engine


def test_import_export_round_trip_is_lossless(engine, refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    saved = repo.import_index(engine, index, actor=COMMAND_LINE)
    assert [(s.name, s.version, s.created) for s in saved] == [("refunds", 1, True)]
    assert repo.export_index(engine).to_dict() == refund_index_data


def test_reimport_of_same_content_adds_no_version(engine, refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    repo.import_index(engine, index, actor=COMMAND_LINE)
    again = repo.import_index(engine, index, actor=COMMAND_LINE)
    assert again[0].created is False
    assert [v.version for v in repo.versions(engine, "refunds")] == [1]


def test_edit_makes_new_version_and_old_stays_readable(engine, refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    repo.save_skill(engine, skill, author="ann", actor=COMMAND_LINE)
    rules = list(skill.graph.rules.values())
    rules[0] = dataclasses.replace(rules[0], action="verify identity with order number and email")
    edited = SkillGraph(skill.name, skill.description, skill.source,
                        RuleGraph(rules, skill.graph.edges[:2]))
    v2 = repo.save_skill(engine, edited, author="bob", note="tighten R1; drop R2->R1", actor=COMMAND_LINE)
    assert (v2.version, v2.created) == (2, True)
    assert repo.load_skill(engine, "refunds", 1).graph.rules["R1"].action == "verify the customer's identity"
    latest = repo.load_skill(engine, "refunds")
    assert latest.graph.rules["R1"].action.startswith("verify identity with order")
    assert len(latest.graph.edges) == 2
    history = repo.edit_history(engine, "refunds")
    assert [(h.from_version, h.to_version, h.author) for h in history] == [(1, 2, "bob")]


def test_missing_and_deleted_skills_say_what_exists(engine, refund_index_data):
    repo.import_index(engine, PolicyIndex.from_dict(refund_index_data), actor=COMMAND_LINE)
    with pytest.raises(repo.NotFound, match="known SKILLs: refunds"):
        repo.load_skill(engine, "nope")
    with pytest.raises(repo.NotFound, match="version 9"):
        repo.load_skill(engine, "refunds", 9)
    assert repo.delete_skill(engine, "refunds", actor=COMMAND_LINE) == 1
    assert repo.skill_names(engine) == []
    with pytest.raises(repo.NotFound, match="import an index first"):
        repo.load_skill(engine, "refunds")


def test_empty_skill_round_trips(engine):
    lone = SkillGraph("empty", "", "---\nname: empty\n---\n", RuleGraph())
    repo.save_skill(engine, lone, actor=COMMAND_LINE)
    assert repo.export_index(engine).to_dict()["skills"][0]["rules"] == []
    one = SkillGraph("one", "d", "text", RuleGraph([Rule("A", "c", "a", "permitted")]))
    repo.save_skill(engine, one, actor=COMMAND_LINE)
    assert repo.skill_names(engine) == ["empty", "one"]


def test_database_url_from_environment(tmp_path, monkeypatch):
    from store.db import database_url, make_engine

    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'env.db'}")
    assert database_url() == f"sqlite:///{tmp_path / 'env.db'}"
    make_engine().dispose()
    assert (tmp_path / "env.db").exists()


def test_database_url_accepts_a_plain_file_path(tmp_path, monkeypatch):
    # People write WORKBENCH_DB=/path/to/w.db; SQLAlchemy alone rejects it with a parse error.
    from store.db import database_url, make_engine

    target = tmp_path / "nested" / "plain.db"
    monkeypatch.setenv("WORKBENCH_DB", str(target))
    assert database_url() == f"sqlite:///{target}"
    make_engine().dispose()
    assert target.exists()
