"""Issue 35 in real Chromium: a sign-in that survives a reload, a pasted link and a new tab;
an annotator never able to save a graph after a reload (no fall-back to "everyone may do
everything"); an imported file's proposals and provenance on the Graph page; a version diff;
ten proposals accepted as one version; no Deploy button."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import assert_no_exception, goto, start_server
from .identity import sign_in, sign_out
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

N_PROPOSED = 10


def desk_index() -> dict:
    """A SKILL of 12 rules in a chain of sourced edges, with 10 proposals (from a cue)."""
    sentences = [f"Step {i}: the agent checks item {i} before going on." for i in range(12)]
    source = "# Desk\n" + "\n".join(sentences) + "\n"
    rules = []
    for i, text in enumerate(sentences):
        start = source.index(text)
        rules.append({"id": f"D{i:02d}", "condition": f"item {i} is asked about",
                      "action": f"check item {i}", "modality": "required",
                      "spans": [{"start": start, "end": start + len(text)}],
                      "provenance": "model", "confidence": 0.8})
    edges = [{"source": f"D{i:02d}", "target": f"D{i - 1:02d}", "type": "require",
              "provenance": "procedure", "confidence": 0.9, "note": "numbered steps"}
             for i in range(1, 5)]
    proposed = [{"source": f"D{i:02d}", "target": f"D{i - 2:02d}", "type": "require",
                 "provenance": "continuation", "confidence": round(0.30 + i / 100, 2),
                 "note": "follows"} for i in range(2, 2 + N_PROPOSED)]
    return {"format": "skillcdg/1", "skills": [{
        "name": "desk", "description": "the desk", "source": source, "rules": rules,
        "edges": edges, "proposed_edges": proposed}]}


def _import_with_the_cli(tmp_path):
    """Seed through `workbench import`, the path issue 35 found lossy."""
    def seed(eng) -> None:
        from workbench.cli import main

        path = tmp_path / "desk.json"
        path.write_text(json.dumps(desk_index()))
        assert main(["import", str(path), "--db", str(eng.url)]) == 0

    return seed


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path, _import_with_the_cli(tmp_path))
    yield srv
    srv.stop()


@pytest.fixture
def roster_server(tmp_path):
    from store import people
    from workbench.identity.roles import Actor

    seed_desk = _import_with_the_cli(tmp_path)

    def seed(eng) -> None:
        seed_desk(eng)
        people.save_person(eng, "ada", "admin", actor=COMMAND_LINE)
        people.save_person(eng, "ann", "annotator", password="ann-pass-1",
                           actor=Actor.signed_in("ada", "admin"))

    srv = start_server(tmp_path, seed)
    yield srv
    srv.stop()


def _sidebar(page):
    return screen(page).sidebar


def _says(page, text: str) -> None:
    """The sidebar says ``text`` (an idle page's newest render)."""
    shown(page, lambda s: s.sidebar.get_by_text(text).first)


def _save(page):
    return screen(page).get_by_role("button", name="Save as new version")


def test_sign_in_survives_a_reload_a_pasted_link_and_a_new_tab(server, page):
    goto(page, server, "graph")
    expect(screen(page).locator("[data-testid='stAppDeployButton']")).to_have_count(0)  # item 10
    expect(screen(page).get_by_role("button", name="Deploy")).to_have_count(0)
    sign_in(page, "alice", "annotator")
    page.reload()  # F5: a new session; the browser's cookie brings the sign-in back
    _says(page, "Signed in as alice (annotator)")
    expect(_save(page)).to_be_disabled()
    shown(page, lambda s: s.get_by_text("to edit graphs you need the role author or admin"))

    pasted = page.context.new_page()  # a pasted link, in a new tab of the same browser
    pasted.goto(f"{server.url}/graph?skill=desk&rule=D03")
    _says(pasted, "Signed in as alice (annotator)")
    expect(screen(pasted).get_by_role("heading", name="Rule D03")).to_be_visible()
    expect(_save(pasted)).to_be_disabled()

    sign_out(pasted)  # revokes the token: the first tab is signed out at its next load
    _says(pasted, "Sign in")
    page.reload()
    idle(page)
    expect(_sidebar(page).get_by_text("Signed in as alice")).to_have_count(0)
    assert_no_exception(page, server)
    assert page.external_requests == []


def _roster_sign_in(page, name: str, password: str) -> None:
    sidebar = _sidebar(page)
    if not sidebar.locator("[data-testid='stForm']").is_visible():
        sidebar.locator("[data-testid='stExpander'] summary", has_text="Sign in").click()
    form = shown(page, lambda s: s.sidebar.locator("[data-testid='stForm']"))
    expect(form.get_by_role("combobox", name="Role")).to_have_count(0)  # the roster decides
    form.get_by_label("Sign-in name").fill(name)
    form.get_by_role("textbox", name="Password").fill(password)
    form.get_by_role("button", name="Sign in").click()
    idle(page)


def test_an_annotator_can_never_save_a_graph_after_a_reload(roster_server, page):
    server = roster_server
    goto(page, server, "graph")
    # A roster exists: nobody signed in reads and changes nothing (it was single-user mode).
    _says(page, "Not signed in: you can read everything and change nothing")
    expect(_save(page)).to_be_disabled()
    expect(screen(page).get_by_role("button", name="Save rule")).to_be_disabled()
    _roster_sign_in(page, "ann", "wrong")
    _says(page, "that name and password do not sign anyone in")
    _roster_sign_in(page, "ann", "ann-pass-1")
    _says(page, "Signed in as ann (annotator)")
    for _ in range(2):  # a reload, and another
        page.reload()
        _says(page, "Signed in as ann (annotator)")
        for button in ("Save as new version", "Save rule", "Add edge"):
            expect(screen(page).get_by_role("button", name=button)).to_be_disabled()
    sign_out(page)
    page.reload()
    _says(page, "Not signed in: you can read everything and change nothing")
    expect(_save(page)).to_be_disabled()
    assert_no_exception(page, server)


def test_the_imported_proposals_and_provenance_are_on_the_graph_page(server, page):
    goto(page, server, "graph")
    # Imported with `workbench import`: it showed "No proposed edge is waiting" and
    # "Edges from: unknown (12)".
    shown(page, lambda s: s.get_by_text(f"{N_PROPOSED} waiting. Press a to accept, x to reject."))
    shown(page, lambda s: s.get_by_text("D11 requires D09 — continuation, confidence 0.41"))
    expect(screen(page).get_by_text("No proposed edge is waiting")).to_have_count(0)
    edges_from = screen(page).locator("[data-testid='stMultiSelect']").filter(has_text="Edges from")
    expect(edges_from).to_contain_text("procedure (4)")
    expect(edges_from).not_to_contain_text("unknown")
    assert_no_exception(page, server)


def test_ten_proposals_accepted_make_one_version(server, page):
    from store import edge_decisions, repo

    goto(page, server, "graph")
    screen(page).get_by_text(f"Decide several at once ({N_PROPOSED} proposals waiting)").click()
    idle(page)
    screen(page).get_by_text(f"Choose all {N_PROPOSED} waiting proposals").click()
    idle(page)
    shown(page, lambda s: s.get_by_text("Accepting saves one new version: added edges"))
    screen(page).get_by_role("button", name=f"Accept {N_PROPOSED} proposals").click()
    shown(page, lambda s: s.get_by_text(f"Saved version 2 ({N_PROPOSED} accepted proposals)"),
          timeout=60_000)
    expect(screen(page).get_by_role("combobox", name="Version", exact=True)).to_have_value("2")
    shown(page, lambda s: s.get_by_text("No proposed edge is waiting"))
    assert_no_exception(page, server)
    with server.store() as eng:
        assert [v.version for v in repo.versions(eng, "desk")] == [1, 2]
        skill = repo.load_skill(eng, "desk")
        assert len(skill.graph.edges) == 4 + N_PROPOSED and skill.proposed == []
        assert len(edge_decisions.load_edge_decisions(eng, "desk").accepted) == N_PROPOSED
        (entry,) = repo.edit_history(eng, "desk")
        assert entry.summary.startswith("added edges D02->D00, D03->D01")


def test_a_version_diff_names_rules_fields_and_edges(server, page):
    from store import repo
    from workbench.graph.editing import apply_edits

    # Version 2: an edited action and a removed edge, with a note that claims more.
    with server.store() as eng:
        skill = repo.load_skill(eng, "desk")
        rows = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
                for r in skill.graph.rules.values()]
        rows[3]["action"] = "check item 3 twice"
        edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges][1:]
        result = apply_edits(skill, rows, edges)
        repo.save_skill(eng, result.skill, author="otto", note="added an edge D05->D00",
                        base_version=1, actor=COMMAND_LINE)
    goto(page, server, "graph")
    screen(page).get_by_text("Compare versions").click()
    idle(page)
    def compared(s):
        return s.locator("[data-testid='stExpander']", has_text="Compare versions")

    shown(page, lambda s: compared(s).get_by_text(
        "Version 1 → 2: edited rules D03; removed edges D01 → D00"))
    for cell in ("check item 3 twice", "D01 requires D00"):
        shown(page, lambda s, c=cell: compared(s).locator("[data-testid='stDataFrame'] td",
                                                           has_text=c))
    screen(page).get_by_text("Edit history").click()
    idle(page)
    history = screen(page).locator("[data-testid='stExpander']", has_text="Edit history")
    cells = history.locator("tbody tr").first.locator("td")
    # The computed summary with the screen's arrow; the author's note as written.
    expect(cells.nth(4)).to_have_text("edited rules D03; removed edges D01 → D00")
    expect(cells.nth(5)).to_have_text("added an edge D05->D00")  # the note, as a note
    expect(screen(page).get_by_text(re.compile("1 rules"))).to_have_count(0)
    assert_no_exception(page, server)
