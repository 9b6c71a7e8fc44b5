"""``workbench graph edit`` and ``workbench graph diff`` (issue 32 item 6, issue 35 item 3):
headless graph edits through the Graph page's store functions, roles and stale-version guard;
accepting many proposals makes one version; a diff names rules and fields."""

from __future__ import annotations

import json

import pytest

from store import edge_decisions, people, repo
from store.db import make_engine
from tests.test_store_index_io import full_index
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE, Actor


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'edit.db'}"
    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.from_dict(full_index()), actor=COMMAND_LINE)
    yield url, eng
    eng.dispose()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse refusals
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_an_edit_is_one_version_with_the_computed_summary_and_the_note_apart(db, capsys):
    url, eng = db
    code, out, _ = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--set", "V", "action", "verify the photo id", "--add-edge", "K", "F",
                       "--note", "added an edge C->V")  # a note that claims something else
    assert code == 0 and "saved version 2: edited rules V; added edges K->F" in out
    (entry,) = repo.edit_history(eng, "desk")
    assert entry.summary == "edited rules V; added edges K->F"
    assert entry.note == "added an edge C->V"
    after = repo.load_skill(eng, "desk")
    assert after.graph.rules["V"].action == "verify the photo id"
    assert {e.pair: e.provenance for e in after.graph.edges}[("K", "F")] == "author"
    assert {e.pair: e.provenance for e in after.graph.edges}[("F", "V")] == "procedure"


def test_a_stale_base_version_is_refused_and_nothing_is_saved(db, capsys):
    url, eng = db
    assert run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
               "--remove-edge", "C", "F")[0] == 0
    code, _, err = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--set", "V", "modality", "permitted")
    assert code == 2 and "made on version 1, but version 2 is the latest" in err
    assert "removed edges C->F" in err  # what changed since
    assert [v.version for v in repo.versions(eng, "desk")] == [1, 2]


def test_bad_edits_are_all_reported_and_nothing_saved(db, capsys):
    url, eng = db
    code, _, err = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--set", "V", "modality", "must", "--add-edge", "V", "ghost")
    assert code == 2 and "modality 'must' is not one of" in err and "'ghost' is not a rule" in err
    assert [v.version for v in repo.versions(eng, "desk")] == [1]
    assert run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
               "--set", "V", "colour", "red")[2].count("no such field") == 1


def test_removing_a_rule_removes_its_edges(db, capsys):
    url, eng = db
    code, out, _ = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--remove-rule", "C")
    assert code == 0 and "removed rules C; removed edges C->F, K->C" in out
    assert "C" not in repo.load_skill(eng, "desk").graph.rules


def test_accept_all_makes_one_version_and_records_every_verdict(db, capsys):
    url, eng = db
    code, out, _ = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--accept-all", "--dry-run")
    assert code == 0 and "would decide 2 edge(s): added edges C->V, K->V" in out
    assert [v.version for v in repo.versions(eng, "desk")] == [1]
    code, out, _ = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--accept-all")
    assert code == 0 and "2 accepted, 0 rejected, saved as version 2" in out
    assert [v.version for v in repo.versions(eng, "desk")] == [1, 2]
    skill = repo.load_skill(eng, "desk")
    assert skill.proposed == [] and {("C", "V"), ("K", "V")} <= {e.pair for e in skill.graph.edges}
    assert {("C", "V"), ("K", "V")} <= edge_decisions.load_edge_decisions(eng, "desk").accepted


def test_rejecting_proposals_records_them_without_a_version(db, capsys):
    url, eng = db
    code, out, _ = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--reject", "C", "V", "--reject", "K", "V")
    assert code == 0 and "0 accepted, 2 rejected, recorded; the graph is unchanged" in out
    assert [v.version for v in repo.versions(eng, "desk")] == [1]
    assert repo.load_skill(eng, "desk").proposed == []


def test_edits_and_decisions_are_not_mixed(db, capsys):
    url, _ = db
    code, _, err = run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
                       "--accept-all", "--add-edge", "K", "F")
    assert code == 2 and "separate versions" in err


def test_the_roster_decides_on_the_command_line_as_on_the_pages(db, capsys):
    url, eng = db
    people.save_person(eng, "ada", "admin", actor=COMMAND_LINE)
    people.save_person(eng, "ann", "annotator", actor=Actor.signed_in("ada", "admin"))
    args = ("graph", "edit", "desk", "--base-version", "1", "--db", url, "--accept-all")
    code, _, err = run(capsys, *args)
    assert code == 2 and "pass --as NAME or set WORKBENCH_USER" in err
    code, _, err = run(capsys, *args, "--as", "ann")
    assert code == 2 and "ann is signed in as annotator, which may not edit graphs" in err
    assert [v.version for v in repo.versions(eng, "desk")] == [1]
    assert edge_decisions.load_edge_decisions(eng, "desk").accepted == {("K", "C")}  # the imported one
    assert run(capsys, *args, "--as", "ada")[0] == 0
    assert repo.edit_history(eng, "desk")[-1].author == "ada"


def test_graph_diff_names_rules_fields_and_edges(db, capsys):
    url, _ = db
    run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
        "--set", "F", "condition", "a fare is shown", "--remove-edge", "K", "C",
        "--add-rule", "N", "required", "always", "say hello")
    code, out, _ = run(capsys, "graph", "diff", "desk", "--db", url)
    assert code == 0
    assert out.splitlines() == [
        "desk: version 1 -> 2: added rules N; edited rules F; removed edges K->C",
        "+ rule N [required] if always: say hello",
        "~ rule F condition: a fare -> a fare is shown",
        "- edge K -> C",
    ]
    data = json.loads(run(capsys, "graph", "diff", "desk", "--from", "1", "--to", "2",
                          "--db", url, "--json")[1])
    assert data["rules_changed"] == [{"id": "F", "changes": [
        {"field": "condition", "before": "a fare", "after": "a fare is shown"}]}]
    code, _, err = run(capsys, "graph", "diff", "desk", "--to", "1", "--db", url)
    assert code == 2 and "no version before 1" in err


def test_what_the_command_line_decided_shows_on_the_graph_page(db, capsys, monkeypatch):
    """Issue 32 item 6: a scripted edit and accept are what the page then shows."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    url, eng = db
    assert run(capsys, "graph", "edit", "desk", "--base-version", "1", "--db", url,
               "--add-edge", "K", "F")[0] == 0
    assert run(capsys, "graph", "edit", "desk", "--base-version", "2", "--db", url,
               "--accept", "C", "V")[0] == 0
    monkeypatch.setenv("WORKBENCH_DB", url)
    page = Path(__file__).resolve().parents[1] / "pages" / "graph.py"
    at = AppTest.from_file(str(page), default_timeout=60)
    at.query_params["rule"] = "K"
    at.run()
    assert not at.exception
    assert at.selectbox(key="graph_version").value == 3  # edit: v2, accept: v3
    # The one proposal left (K -> V) is the one waiting; C -> V is an edge now.
    assert any("K requires V — cross-reference" in m.value.replace("\\", "") for m in at.markdown)
    assert not any("C requires V" in m.value.replace("\\", "") for m in at.markdown)
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert "Requires: C, F · Required by: nothing" in captions  # K's edges: imported and added
    # Edges by the author: K -> C (imported), K -> F (edited), C -> V (accepted).
    assert at.multiselect(key="graph_provenance_desk").format_func("author") == "author (3)"
