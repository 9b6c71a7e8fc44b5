"""URL state (issue #16, item 4): Replay reads and writes ?dataset=&case=&run=, so reload and
shared links open the same case; a link to something missing says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from components.links import graph_link, page_link, replay_link
from store import audit_repo
from workbench.audit import AuditIndex, AuditOptions, Verdict, audit_case
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
REPLAY = str(ROOT / "pages" / "replay.py")


def test_links_carry_url_state_and_escape_values():
    assert replay_link("demo", "mor-007") == "/replay?dataset=demo&case=mor-007"
    assert replay_link("d s", "a&b", run="r1") == "/replay?dataset=d+s&case=a%26b&run=r1"
    assert graph_link("refunds", "R2", 3) == "/graph?skill=refunds&version=3&rule=R2"
    assert page_link("review", {"position": None}) == "/review"


def _replay(query: dict) -> AppTest:
    at = AppTest.from_file(REPLAY, default_timeout=60)
    at.query_params.update(query)
    return at.run()


def test_replay_opens_the_case_the_url_names_and_writes_the_choice_back(demo_db):
    _, _, cases = demo_db
    third = cases[2].id
    at = _replay({"dataset": "demo", "case": third})
    assert not at.exception
    assert at.selectbox(key="replay_case").value == third
    assert not at.warning
    # A choice made on the page goes into the address (and is not undone by the old one).
    fifth = cases[4].id
    at.selectbox(key="replay_case").set_value(fifth).run()
    assert at.selectbox(key="replay_case").value == fifth
    assert at.query_params["case"] == [fifth] or at.query_params["case"] == fifth
    at.run()  # a later rerun with the same address keeps the user's choice
    assert at.selectbox(key="replay_case").value == fifth


def test_replay_without_url_state_publishes_the_first_case(demo_db):
    _, _, cases = demo_db
    at = _replay({})
    assert at.selectbox(key="replay_case").value == cases[0].id
    assert dict(at.query_params) in ({"dataset": "demo", "case": cases[0].id},
                                     {"dataset": ["demo"], "case": [cases[0].id]})


def test_a_link_to_a_missing_case_says_so(demo_db):
    _, _, cases = demo_db
    at = _replay({"dataset": "demo", "case": "no-such-case"})
    assert not at.exception
    assert "no-such-case" in at.warning[0].value.replace("\\", "")
    assert at.selectbox(key="replay_case").value == cases[0].id


@pytest.fixture
def two_runs(demo_db):
    eng, index, cases = demo_db
    case = next(c for c in cases if c.id.startswith("mor-002"))
    for run_id, violation in (("old", True), ("new", False)):
        trace = audit_case(case, AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
        # a violation names a rule of its closure, else the card says "to review" (issue 53)
        rules = [trace.closure_ids[0]] if violation else []
        trace.verdict = Verdict(violation, f"verdict of run {run_id}", rules)
        audit_repo.save_trace(eng, trace, run_id=run_id, dataset="demo", actor=COMMAND_LINE)
    return case


def test_run_in_the_url_pins_the_trace_shown(two_runs):
    at = _replay({"dataset": "demo", "case": two_runs.id})
    assert [e.value for e in at.error][:1] == []  # newest (run "new") is compliant
    at = _replay({"dataset": "demo", "case": two_runs.id, "run": "old"})
    assert not at.exception
    assert [e.value for e in at.error][:1] == ["Violation"]


# -- Graph: ?skill=&version=&rule= ------------------------------------------------------------

GRAPH = str(ROOT / "pages" / "graph.py")


@pytest.fixture
def graph_db(refund_db):
    """The refund SKILL with a second version (R1's action edited)."""
    from store import repo
    from workbench.graph.editing import apply_edits

    eng = refund_db
    skill = repo.load_skill(eng, "refunds", 1)
    rules = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
             for r in skill.graph.rules.values()]
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
    rules[0]["action"] = "verify identity by phone"
    repo.save_skill(eng, apply_edits(skill, rules, edges).skill, base_version=1, actor=COMMAND_LINE)
    return eng


def _graph(query: dict) -> AppTest:
    at = AppTest.from_file(GRAPH, default_timeout=60)
    at.query_params.update(query)
    return at.run()


def _param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_graph_opens_the_rule_and_version_the_url_names(graph_db):
    at = _graph({"skill": "refunds", "rule": "R1", "version": "1"})
    assert not at.exception
    assert at.selectbox(key="graph_rule").value == "R1"
    assert at.selectbox(key="graph_version").value == 1
    assert any("not the latest" in w.value for w in at.warning)  # the old-version banner
    # Choosing another rule and the latest version is written back; latest is not pinned.
    at.selectbox(key="graph_rule").set_value("R2").run()
    at.selectbox(key="graph_version").set_value(2).run()
    assert _param(at, "rule") == "R2" and "version" not in at.query_params
    assert at.selectbox(key="graph_rule").value == "R2"


def test_graph_link_to_a_missing_rule_says_so(graph_db):
    at = _graph({"skill": "refunds", "rule": "R99"})
    assert not at.exception
    assert any("R99" in w.value for w in at.warning)
    assert at.selectbox(key="graph_rule").value == "R3"  # the default: most prerequisites


def test_rule_tables_link_each_rule_to_the_graph_page():
    import pandas as pd

    from components.rules import with_rule_links

    frame = pd.DataFrame({"skill": ["refunds", "a&b"], "rule": ["R1", "R 2<x>"]})
    linked = with_rule_links(frame, "", id_column="rule", skill_column="skill")
    assert list(linked["open"]) == ["/graph?skill=refunds&rule=R1",
                                    "/graph?skill=a%26b&rule=R+2%3Cx%3E"]  # values escaped
    one = with_rule_links(pd.DataFrame({"id": ["R3"]}), "refunds", version=2)
    assert list(one["open"]) == ["/graph?skill=refunds&version=2&rule=R3"]


def test_replay_trace_and_case_list_link_onwards(two_runs):
    at = _replay({"dataset": "demo", "case": two_runs.id})
    assert not at.exception
    frames = [d.value for d in at.dataframe]
    picker = next(f for f in frames if "agrees with gold" in f.columns)
    assert picker["open"].str.startswith("/replay?dataset=demo&case=").all()
    rule_tables = [f for f in frames if "rule" in f.columns and "open" in f.columns]
    assert rule_tables, "the seeds and closure tables link their rules"
    for f in rule_tables:
        assert all(link == graph_link(s, r)
                   for s, r, link in zip(f["skill"], f["rule"], f["open"], strict=True))


def test_graph_rules_shown_link_to_their_rule(graph_db):
    at = _graph({"skill": "refunds", "rule": "R1", "version": "1"})
    assert not at.exception
    shown = next(d.value for d in at.dataframe if "modality" in d.value.columns)
    assert list(shown["open"]) == [graph_link("refunds", r, 1) for r in shown["id"]]
