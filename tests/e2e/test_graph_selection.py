"""Issue 44 item 1 in real Chromium: an edit lands on the rule the author chose.

The path that wrote an edge on another rule: on the demo workspace's 225-rule SKILL, whole
graph, click MOR-S006 in the drawing, edit its action, *Save rule* (v2), *Find cases whose
closure changes*, pick MOR-O008 as prerequisite, *Add edge*. The selection jumped back to
MOR-C005 at *Find cases* and the store recorded v3 "added edges MOR-C005->MOR-O008". Here
every write the Graph page makes on the selected rule (save the rule, add an edge either way,
remove an edge) names its rule(s) on its button and is checked in the store after it; the
"Saved version N" confirmation is next to the button that saved (item 8), and the note field
is empty again after a save.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .flows import assert_no_exception, demo_cases, demo_index_data, start_server
from .graph_drawing import click_rule, wait_drawn
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

SKILL = "merchant-order-refund"
CLICKED, TARGET, DEFAULT = "MOR-S006", "MOR-O008", "MOR-C005"
NEW_ACTION = "first share the latest tracking information, the carrier estimate and its date"


def _seed(eng) -> None:
    from store import audit_repo, repo
    from workbench.graph import PolicyIndex
    from workbench.identity.roles import COMMAND_LINE

    repo.import_index(eng, PolicyIndex.from_dict(demo_index_data()), actor=COMMAND_LINE)
    audit_repo.save_cases(eng, "demo", demo_cases(), actor=COMMAND_LINE)


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path, _seed)
    yield srv
    srv.stop()


def _section_node(rule_id: str) -> str:
    from workbench.graph import PolicyIndex
    from workbench.graph.clusters import section_id, sections

    skill = PolicyIndex.from_dict(demo_index_data()).skills[SKILL]
    return next(section_id(i) for i, rules in enumerate(sections(skill).values())
                if rule_id in rules)


def _pick(page, label: str, rule_id: str) -> None:
    """Choose ``rule_id`` in the select box ``label`` by typing it (225 options)."""
    box = screen(page).get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(rule_id)
    shown(page, lambda s: s.get_by_role("option", name=re.compile(rf"^{re.escape(rule_id)}\b"))
          ).first.click()
    idle(page)


def _shows(page, rule_id: str) -> None:
    """The page shows ``rule_id`` as the selected rule: heading, select box and address."""
    expect(screen(page).get_by_role("heading", name=f"Rule {rule_id}")).to_be_visible()
    expect(screen(page).get_by_role("combobox", name="Rule", exact=True)).to_have_value(
        re.compile(rf"^{re.escape(rule_id)} "))
    expect(page).to_have_url(re.compile(rf"[?&]rule={re.escape(rule_id)}(&|$)"))


def _confirmed_beside(page, text: str, button) -> None:
    """``text`` appears in a success box within a few lines of ``button`` (not 750 px away)."""
    note = shown(page, lambda s: s.locator("[data-testid='stAlertContentSuccess']", has_text=text),
                 timeout=60_000)
    note.scroll_into_view_if_needed()
    near, there = note.bounding_box(), button.bounding_box()
    assert near and there, "the confirmation or its button is not drawn"
    assert abs(near["y"] - there["y"]) < 160, (near, there)


def test_an_edge_lands_on_the_clicked_rule_after_a_save_and_find_cases(server, page):
    from store import repo

    page.goto(f"{server.url}/graph?skill={SKILL}")
    idle(page)
    screen(page).get_by_text("whole graph", exact=True).click()
    idle(page)
    # The 225 rules are drawn by section (item 6): open MOR-S006's with a click on its box.
    wait_drawn(page)
    click_rule(page, _section_node(CLICKED))
    click_rule(page, CLICKED)  # once its section is open and drawn
    idle(page)
    _shows(page, CLICKED)

    # Save rule, with a note: the confirmation is beside the button, the note is cleared.
    form = screen(page).locator("[data-testid='stForm']", has_text=f"Edit {CLICKED}")
    form.get_by_label("Then (action)").fill(NEW_ACTION)
    form.get_by_label("What and why (optional)").fill("clearer wording")
    save = screen(page).get_by_role("button", name=f"Save rule {CLICKED}")
    save.click()
    _confirmed_beside(page, "Saved version 2",
                      screen(page).get_by_role("button", name=f"Save rule {CLICKED}"))
    _shows(page, CLICKED)
    expect(screen(page).locator("[data-testid='stForm']", has_text=f"Edit {CLICKED}")
           .get_by_label("What and why (optional)")).to_have_value("")

    # Edit impact's full rerun: the selection used to jump to the default rule here.
    screen(page).get_by_role("button", name="Find the cases version 2 reaches").click()
    idle(page)
    assert_no_exception(page, server)
    _shows(page, CLICKED)

    # Add an edge: the button names both ends before the press.
    _pick(page, "Prerequisite (target)", TARGET)
    add = screen(page).get_by_role("button", name=f"Add edge {CLICKED} → {TARGET}")
    expect(add).to_be_visible()
    add.click()
    _confirmed_beside(page, f"Saved version 3: added edges {CLICKED} → {TARGET}",
                      screen(page).get_by_role("button", name=re.compile(r"^Add edge ")))
    _shows(page, CLICKED)
    with server.store() as eng:
        skill = repo.load_skill(eng, SKILL)
        pairs = {e.pair for e in skill.graph.edges}
        assert (CLICKED, TARGET) in pairs and (DEFAULT, TARGET) not in pairs
        assert skill.graph.rules[CLICKED].action == NEW_ACTION
        history = repo.edit_history(eng, SKILL)
        assert [h.summary for h in history][-2:] == [f"edited rules {CLICKED}",
                                                     f"added edges {CLICKED}->{TARGET}"]
        assert history[-2].note == "clearer wording"

    # The other direction: a rule that requires the selected one.
    screen(page).get_by_text(f"… requires {CLICKED}", exact=True).click()
    idle(page)
    _pick(page, "Rule that requires it (source)", "MOR-G001")
    screen(page).get_by_role("button", name=f"Add edge MOR-G001 → {CLICKED}").click()
    shown(page, lambda s: s.get_by_text("Saved version 4: added edges MOR-G001 → " + CLICKED),
          timeout=60_000)
    _shows(page, CLICKED)

    # Remove an edge of the selected rule: the button names the edge.
    remove_box = screen(page).get_by_role("combobox", name="Remove an edge of this rule", exact=True)
    remove_box.click()
    shown(page, lambda s: s.get_by_role("option", name=f"{CLICKED} requires {TARGET}")).click()
    idle(page)
    remove = screen(page).get_by_role("button", name=f"Remove edge {CLICKED} → {TARGET}")
    remove.click()
    _confirmed_beside(page, f"Saved version 5: removed edges {CLICKED} → {TARGET}",
                      screen(page).get_by_role("button", name=re.compile(r"^Remove edge ")))
    _shows(page, CLICKED)
    with server.store() as eng:
        assert [v.version for v in repo.versions(eng, SKILL)] == [1, 2, 3, 4, 5]
        pairs = {e.pair for e in repo.load_skill(eng, SKILL).graph.edges}
        assert ("MOR-G001", CLICKED) in pairs and (CLICKED, TARGET) not in pairs
        assert repo.edit_history(eng, SKILL)[-1].summary == f"removed edges {CLICKED}->{TARGET}"
    assert_no_exception(page, server)
    assert page.external_requests == []
