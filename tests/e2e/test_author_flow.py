"""A policy author in real Chromium against a real server: upload a SKILL.md, extract it with
the embedded model's recorded answers (the gateway in replay mode: an unrecorded request
fails loudly), accept a proposed edge with one key, correct a rule and that edge in the Graph
page's tables, save a new version and find the stored case whose closure the edit changed."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from .flows import (
    ROOT,
    assert_no_exception,
    choose_in_cell,
    goto,
    grid_cell,
    replay_env,
    start_server,
    type_into_cell,
)
from .screen import gone, idle, screen, shown

pytestmark = pytest.mark.e2e

SKILL_MD = ROOT / "fixtures" / "extract" / "refund-desk" / "SKILL.md"
# Its extraction is recorded with the default planning; the SKILL (~300 tokens) is planned
# into the same blocks under the page's default block size (1200 tokens), so the page's
# requests are the recorded ones.
RECORDING = "extract_refund_desk.jsonl"

# Two stored cases that name the SKILL. The recorded extraction (units_v1, fuse_v2) gives refund-desk
# nine rules, no edge, and six proposed edges (each rule to the one before it in its section).
# The author rejects the first three with the key "x" (no new version) and accepts the fourth,
# refunds-R2 -> refunds-R1, with "a" (version 2). The first case's lexical seeds include
# refunds-R2, so retargeting that edge to identity-R1 (version 3) adds identity-R1 to its
# closure; the second case's closure is untouched.
CASES = [
    {"id": "desk-001-refund-over-200", "session": "s1", "label": "negative",
     "skills": ["refund-desk"],
     "context": [{"role": "user", "content": "Please refund my cancelled order, 250 dollars. "
                                              "I need the refund today, no supervisor approval please."}],
     "model_response": "I have refunded 250 dollars to your gift card without supervisor approval."},
    {"id": "desk-002-cancel-processing", "session": "s2", "label": "positive",
     "skills": ["refund-desk"],
     "context": [{"role": "user", "content": "Cancel my order, it is still processing."}],
     "model_response": "Your order is cancelled."},
]
RULES, EDGES = "rules_editor_refund-desk_2", "edges_editor_refund-desk_2"
REFUNDS_R3, ACCEPTED_EDGE = 7, 0  # row positions in the tables of version 2
ACTION, TARGET = 2, 1  # columns: id, condition, action, modality / source, target
NEW_ACTION = "get approval from a supervisor before refunding"


def seed(eng) -> None:
    from store import audit_repo
    from workbench.audit import case_from_dict

    audit_repo.save_cases(eng, "desk", [case_from_dict(c) for c in CASES], actor=COMMAND_LINE)


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path, seed, env=replay_env(RECORDING))
    yield srv
    srv.stop()


def test_upload_extract_edit_save_and_impact(server, page):
    # -- upload and extract (the default page answers at "/") -----------------------------
    goto(page, server, "")
    shown(page, lambda s: s.get_by_text("No SKILLs in the store yet"))
    block = screen(page).get_by_label("Block size (tokens per extractor call)", exact=True)
    assert block.input_value() == "1200"
    screen(page).locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(SKILL_MD))
    shown(page, lambda s: s.get_by_text("SKILL.md", exact=True))
    idle(page)
    screen(page).get_by_role("button", name="Extract", exact=True).click()
    outcome = shown(page, lambda s: s.locator("[data-testid='stAlertContentSuccess'], "
                                              "[data-testid='stAlertContentError']"),
                    timeout=60_000)
    assert_no_exception(page, server)
    # An unrecorded request (a changed prompt or schema: re-record) shows up here as an error.
    expect(outcome).to_have_text(["refund-desk: 9 rules, 0 edges — version 1"])
    # The progress bar ran to the end and names the SKILL.
    bar = screen(page).locator("[data-testid='stProgress']")
    assert "refund-desk:" in bar.inner_text()
    assert bar.get_by_role("progressbar").get_attribute("aria-valuenow") == "100"
    # The new SKILL is listed with its rules (the metrics are drawn a moment after the run).
    expect(screen(page).locator("[data-testid='stMetricValue']")).to_have_text(
        ["1", "9", "0", re.compile(r"^\d+(\.\d{1,3})?$")])  # SKILLs, rules, edges, complexity
    shown(page, lambda s: s.get_by_text("v1 by analyst (extracted)"))
    shown(page, lambda s: s.get_by_text("Extraction report of v1"))

    # -- accept a proposed edge with one key ----------------------------------------------------
    goto(page, server, "graph")
    shown(page, lambda s: s.get_by_text("9 of 9 rules match."))
    for edge, key in (("cancellation-R2 requires cancellation-R1", "x"),
                      ("cancellation-R3 requires cancellation-R2", "x"),
                      ("identity-R2 requires identity-R1", "x"),
                      ("refunds-R2 requires refunds-R1", "a")):
        proposal = f"{edge} — continuation, confidence 0.30"
        shown(page, lambda s, p=proposal: s.get_by_text(p), timeout=90_000)
        # The key is pressed on an idle page (the shortcut listener of this render attached;
        # a key pressed during a rerun was lost once), with the focus on the page, not in an
        # input, so it is a shortcut; once, and the decided proposal must leave the screen.
        screen(page).locator("h1").first.click()
        page.keyboard.press(key)
        gone(page, lambda s, p=proposal: s.get_by_text(p), timeout=60_000)
    shown(page, lambda s: s.get_by_text("refunds-R3 requires refunds-R2"), timeout=90_000)
    idle(page)
    assert_no_exception(page, server)
    expect(screen(page).get_by_role("combobox", name="Version", exact=True)).to_have_value("2")

    # -- edit a rule and the accepted edge, save ---------------------------------------------
    expect(grid_cell(page, RULES, REFUNDS_R3, 0)).to_have_text("refunds-R3")
    expect(grid_cell(page, EDGES, ACCEPTED_EDGE, 0)).to_have_text("refunds-R2")
    expect(grid_cell(page, EDGES, ACCEPTED_EDGE, TARGET)).to_have_text("refunds-R1")
    type_into_cell(page, RULES, REFUNDS_R3, ACTION, NEW_ACTION)
    choose_in_cell(page, EDGES, ACCEPTED_EDGE, TARGET, "identity-R1")
    author = screen(page).get_by_label("Your name")
    author.fill("ada")
    author.press("Tab")
    idle(page)
    screen(page).get_by_role("button", name="Save as new version").click()
    shown(page, lambda s: s.get_by_text(
        "Saved version 3: edited rules refunds-R3; added edges refunds-R2 → identity-R1; "
        "removed edges refunds-R2 → refunds-R1"), timeout=30_000)
    assert_no_exception(page, server)
    # The page moves on to the new version: its tables (keyed by version) hold the edit, and
    # the Version box says so, or the next click would go back to version 2.
    expect(grid_cell(page, "rules_editor_refund-desk_3", REFUNDS_R3, ACTION)).to_have_text(NEW_ACTION)
    expect(screen(page).get_by_role("combobox", name="Version", exact=True),
           "after a save the Version box must show the new version").to_have_value("3")
    screen(page).locator("[data-testid='stExpander'] summary", has_text="Edit history").click()
    history = screen(page).locator("[data-testid='stExpander']", has_text="Edit history")
    # (a data grid drawn on a canvas: its cells are in the DOM for accessibility only)
    # (oldest first: the accepted edge by analyst, then ada's edit)
    expect(history.locator("tbody tr").nth(0).locator("td").nth(1)).to_have_text("analyst")
    expect(history.locator("tbody tr").nth(1).locator("td").nth(1)).to_have_text("ada")

    # -- edit impact ------------------------------------------------------------------------
    # Keyword seeding: the refund desk is small enough for scored seeding to put every rule
    # in context, so only the keyword-seeded closure shows what the edited edges change.
    # Version 3 is compared with the one before it (issue 56: the comparison follows the
    # newest version).
    screen(page).get_by_text("keyword match").click()
    idle(page)
    expect(screen(page).get_by_role("combobox", name="Compare with version")).to_have_value(
        "version 2")
    screen(page).get_by_role("button", name="Find the cases version 3 reaches").click()
    shown(page, lambda s: s.get_by_text("1 case changes closure", exact=False), timeout=30_000)
    assert_no_exception(page, server)
    # (st.dataframe takes no st-key class; its header names it)
    table = screen(page).locator("[data-testid='stDataFrame']").filter(has_text="closure gains")
    row = table.locator("tbody tr")
    expect(row).to_have_count(1)
    # The last cell links the case to its Replay view (issue #16: case ids were not links).
    expect(row.locator("td")).to_have_text(
        ["desk-001-refund-over-200", re.compile(r"refunds-R2"), "identity-R1", "–",
         "not audited", "/replay?dataset=desk&case=desk-001-refund-over-200"])
    assert page.external_requests == []

    # The new version is in the store, by the author who saved it.
    from store import repo
    from store.db import make_engine

    eng = make_engine(server.db_url)
    try:
        saved = repo.load_skill(eng, "refund-desk", 3)
        assert saved.graph.rules["refunds-R3"].action == NEW_ACTION
        assert [(e.source, e.target) for e in saved.graph.edges] == [("refunds-R2", "identity-R1")]
        assert [(v.version, v.created_by) for v in repo.versions(eng, "refund-desk")] == [
            (1, "analyst"), (2, "analyst"), (3, "ada")]
        from store.edge_decisions import load_edge_decisions

        decisions = load_edge_decisions(eng, "refund-desk")
        assert decisions.accepted == {("refunds-R2", "refunds-R1")} and len(decisions.rejected) == 3
    finally:
        eng.dispose()
