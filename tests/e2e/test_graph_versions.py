"""Issue #16, item 1, in real Chromium: after switching SKILL the Graph page shows the latest
version (the Version box stayed on "1"), an older version carries a visible banner, and
saving an edit made on it is refused with what changed since, instead of silently undoing
the later versions."""

from __future__ import annotations

import copy

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import assert_no_exception, choose, goto, start_server, type_into_cell
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

ACTION = 2  # rule table columns: id, condition, action, modality


def _seed(index_data: dict):
    def seed(eng) -> None:
        from store import repo
        from workbench.graph import PolicyIndex
        from workbench.graph.editing import apply_edits

        other = copy.deepcopy(index_data["skills"][0])
        other["name"] = "returns"
        repo.import_index(eng, PolicyIndex.from_dict(
            dict(index_data, skills=[index_data["skills"][0], other])), actor=COMMAND_LINE)
        for name in ("refunds", "returns"):
            for base, change in ((1, "drop edge"), (2, "edit R1")):
                skill = repo.load_skill(eng, name, base)
                rules = [{"id": r.id, "condition": r.condition, "action": r.action,
                          "modality": r.modality} for r in skill.graph.rules.values()]
                edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
                if change == "drop edge":
                    edges = [e for e in edges if (e["source"], e["target"]) != ("R2", "R1")]
                else:
                    rules[0]["action"] = "verify identity by phone"
                repo.save_skill(eng, apply_edits(skill, rules, edges).skill, base_version=base,
                                actor=COMMAND_LINE)
    return seed


@pytest.fixture
def server(tmp_path, refund_index_data):
    srv = start_server(tmp_path, _seed(refund_index_data))
    yield srv
    srv.stop()


def test_graph_page_never_edits_an_old_version_silently(server, page):
    goto(page, server, "graph")
    version = screen(page).get_by_role("combobox", name="Version", exact=True)
    expect(version).to_have_value("3")
    banner = screen(page).locator("[data-testid='stAlertContentWarning']", has_text="not the latest")
    expect(banner).to_have_count(0)

    choose(page, "Version", "1")
    expect(banner).to_have_count(1)
    choose(page, "SKILL", "returns")
    expect(version, "a new SKILL opens on its latest version").to_have_value("3")
    expect(banner).to_have_count(0)

    choose(page, "SKILL", "refunds")
    choose(page, "Version", "1")
    expect(banner).to_be_visible()
    type_into_cell(page, "rules_editor_refunds_1", 3, ACTION, "refund to the original card only")
    idle(page)
    screen(page).get_by_role("button", name="Save as new version").click()
    error = shown(page, lambda s: s.locator("[data-testid='stAlertContentError']",
                                            has_text="Nothing was saved"))
    assert_no_exception(page, server)
    expect(error).to_contain_text("version 3 is the latest")
    expect(error).to_contain_text("removed edges R2 → R1")

    from store import repo
    from store.db import make_engine

    eng = make_engine(server.db_url)
    try:
        assert [v.version for v in repo.versions(eng, "refunds")] == [1, 2, 3]
    finally:
        eng.dispose()
    assert page.external_requests == []
