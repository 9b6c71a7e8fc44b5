"""Graph page: edges filtered and coloured by provenance; a proposed edge accepted or rejected
with one button (keyboard shortcut a / x; Streamlit keeps r and c)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from components.graph_view import PROVENANCE_COLOURS, graph_html
from store import edge_decisions, repo
from store.db import make_engine
from workbench.graph import Edge, Rule, RuleGraph, SkillGraph, Span
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "Verify the id. Check the fare. Refund to the card."


def skill() -> SkillGraph:
    rules = [Rule(r, "always", f"rule {r}", "required", (Span(i * 15, i * 15 + 10),))
             for i, r in enumerate(("V", "F", "C"))]
    return SkillGraph("desk", "", SOURCE,
                      RuleGraph(rules, [Edge("F", "V", provenance="procedure", confidence=0.9)]),
                      [Edge("C", "F", provenance="continuation", confidence=0.3, note="follows")])


def test_graph_html_colours_by_provenance_and_filters():
    page = graph_html(skill(), ["V", "F", "C"])
    assert PROVENANCE_COLOURS["procedure"] in page and PROVENANCE_COLOURS["continuation"] in page
    only_model = graph_html(skill(), ["V", "F", "C"], provenances=["model"])
    assert PROVENANCE_COLOURS["procedure"] not in only_model


def test_accept_a_proposed_edge_from_the_page(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    s = skill()
    v = repo.save_skill(eng, s, author="extract", actor=COMMAND_LINE).version
    edge_decisions.save_edge_trust(eng, "desk", v, s)

    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60).run()
    assert not at.exception
    assert at.multiselect(key="graph_provenance_desk").value == ["procedure", "continuation"]
    assert any("C requires F" in m.value for m in at.markdown)
    at.button(key="edge_accept").click().run()
    assert not at.exception
    v2 = repo.versions(eng, "desk")[-1].version
    assert v2 == v + 1
    after = edge_decisions.with_trust(eng, "desk", v2, repo.load_skill(eng, "desk", v2))
    assert {e.pair: e.provenance for e in after.graph.edges}[("C", "F")] == "author"
    # Issue 44: the decision is confirmed by its pair, in the proposals panel.
    assert any(f"Accepted C → F: saved version {v2}." in s.value.replace("\\", "") for s in at.success)
    eng.dispose()


def test_a_press_decides_only_the_proposal_its_run_showed(tmp_path, monkeypatch):
    """Issue 44: a press reaches the page after another author decided the proposal it
    showed: the next one must not be decided in its place."""
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    s = skill()
    s.proposed.append(Edge("C", "V", provenance="continuation", confidence=0.2))
    v = repo.save_skill(eng, s, author="extract", actor=COMMAND_LINE).version
    edge_decisions.save_edge_trust(eng, "desk", v, s)
    at = AppTest.from_file(str(ROOT / "pages/graph.py"), default_timeout=60).run()
    assert any("C requires F" in m.value for m in at.markdown)  # shown: the more confident
    edge_decisions.decide_edge(eng, "desk", v, ("C", "F"), False, COMMAND_LINE)  # elsewhere
    at.button(key="edge_reject").click().run()
    assert not at.exception
    assert any("nothing was decided" in w.value for w in at.warning)
    assert ("C", "V") in {e.pair for e in repo.load_skill(eng, "desk").proposed}
    assert set(edge_decisions.load_edge_decisions(eng, "desk").rejected) == {("C", "F")}
    eng.dispose()
