"""Issue #16, item 11 (who is who), in real Chromium against a real server, signed in through
the sidebar: annotator B never sees annotator A's labels on any Annotate view (not even after
labelling the same rule), while a reviewer does; an annotator cannot save a graph edit; an
analyst cannot delete a SKILL, while an author can; an admin changes a role's temperature on
Settings and sees it after a reload, while an analyst gets no control that changes settings;
an annotator gets no "Store this result" on Replay, while an analyst stores the re-run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from workbench.identity.roles import COMMAND_LINE

from .flows import assert_no_exception, choose, goto, import_index, start_server  # noqa: E402
from .identity import sign_in, signed_in_elsewhere  # noqa: E402
from .screen import idle, new_page, screen, shown  # noqa: E402

pytestmark = pytest.mark.e2e

SECRET_NOTE = "ada-secret-note"
SECRET_RULE = "ada-secret-condition"


def seed(eng) -> None:
    from store import repo
    from store.annotation import add_annotator, add_label
    from workbench.annotation.items import reference_item, rule_item
    from workbench.annotation.labels import REFERENCE_RULE, RULE_CORRECTNESS, Label, ReferenceRule

    import_index(eng, refund_index_dict())
    skill = repo.load_skill(eng, "refunds")
    add_annotator(eng, "ada")
    add_label(eng, Label(rule_item(skill, "R1"), RULE_CORRECTNESS, "ada", "incorrect",
                         "hallucinated", SECRET_NOTE), actor=COMMAND_LINE)
    quote = "Refund the amount paid after"
    start = skill.source.index(quote)
    rule = ReferenceRule(SECRET_RULE, "refund", "required", ((start, start + len(quote)),))
    add_label(eng, Label(reference_item(skill), REFERENCE_RULE, "ada", rule.to_value()), actor=COMMAND_LINE)


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path, seed)
    yield srv
    srv.stop()


def open_page(page, title: str) -> None:
    """Follow the sidebar link (a fresh page load would start a new session, signed out)."""
    screen(page).locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    idle(page)
    shown(page, lambda s: s.locator("h1", has_text=title))


def task(page, name: str) -> None:
    screen(page).get_by_text(name, exact=True).click()
    idle(page)


def leaks(page) -> list[str]:
    """Annotator A's words anywhere in the DOM (data grids keep their cells in an
    accessibility table, so the page source holds what the canvas draws)."""
    html = screen(page).content()
    return [s for s in (SECRET_NOTE, SECRET_RULE) if s in html]


def test_annotator_b_never_sees_annotator_a_labels(server, page, browser):
    page.goto(f"{server.url}/annotate")
    idle(page)
    sign_in(page, "bob", "annotator")

    def card(position: str):
        return lambda s: s.locator("[data-testid='wb-rule-card']", has_text=position)

    shown(page, card("1/4"))
    assert leaks(page) == []
    page.keyboard.press("y")  # bob labels R1, which ada labelled too
    shown(page, card("2/4"))
    page.keyboard.press("k")  # back to R1: only bob's own label
    # Read in the newest render only: under load a rerun drew the old and the new card
    # together and get_by_text("never shown to you") found both (issue 56).
    shown(page, card("1/4"))
    shown(page, lambda s: s.get_by_text("Your label: correct"))
    shown(page, lambda s: s.get_by_text("never shown to you"))
    assert leaks(page) == []
    for name in ("Reference inventory", "CDG inspection", "Progress & agreement"):
        task(page, name)
        assert_no_exception(page, server)
        assert leaks(page) == [], name
    task(page, "Dataset report")
    shown(page, lambda s: s.get_by_text("you need the role reviewer or admin"))
    assert screen(page).get_by_role("button", name="Build report").count() == 0
    assert leaks(page) == []

    assert page.external_requests == []

    # The same views, for a reviewer in another browser, do show ada's labels: the checks
    # above can fail.
    with signed_in_elsewhere(browser, server, "annotate", "rita", "reviewer") as rita:
        # R1 is now a disagreement (ada: incorrect, bob: correct), first in the reviewer's queue.
        shown(rita, lambda s: s.locator("[data-testid='wb-rule-card']", has_text="R1"))
        shown(rita, lambda s: s.locator("[data-testid='stDataFrame'] td", has_text=SECRET_NOTE))
        task(rita, "Reference inventory")
        shown(rita, lambda s: s.locator("[data-testid='stDataFrame'] td", has_text=SECRET_RULE))


def test_annotator_cannot_save_a_graph(server, page):
    page.goto(f"{server.url}/graph")
    idle(page)
    sign_in(page, "ann", "annotator")
    expect(screen(page).get_by_role("button", name="Save as new version")).to_be_disabled()
    shown(page, lambda s: s.get_by_text("you need the role author or admin"))


@pytest.fixture
def settings_server(tmp_path):
    """A server whose settings file is a fresh one in tmp_path (never the checkout's)."""
    config = tmp_path / "workbench.toml"
    config.write_text("# the team's settings\n[roles.judge]\nmax_tokens = 512\n")
    srv = start_server(tmp_path, env={"WORKBENCH_CONFIG": str(config)})
    srv.config = config
    yield srv
    srv.stop()


def test_only_an_admin_changes_settings(settings_server, page, browser):
    """An admin changes the judge's temperature and sees it after a reload (the positive
    control: a form that saved nothing, or a page that cached the old configuration, fails
    here); an analyst in another browser sees the same settings with no control to change
    them and the line saying who may."""
    server = settings_server
    goto(page, server, "settings")
    sign_in(page, "ada", "admin")
    choose(page, "Role to change", "judge")

    def temperature(s):
        return s.main.get_by_role("spinbutton", name="Temperature")

    # The form of the chosen role, once the choice's rerun is over: the one form (while it
    # replaced the previous one both were in the page, and typing landed in the old one).
    expect(temperature(screen(page))).to_have_count(1)
    expect(temperature(screen(page))).to_have_value("0.01")
    temperature(screen(page)).fill("0.35")
    page.keyboard.press("Tab")  # a number input applies its value on blur (focus is in it)
    expect(temperature(screen(page))).to_have_value("0.35")
    screen(page).main.get_by_role("button", name="Save settings").click()
    shown(page, lambda s: s.main.get_by_text("Saved judge"))
    assert_no_exception(page, server)
    assert "temperature = 0.35\n" in server.config.read_text()
    assert server.config.read_text().startswith("# the team's settings\n")

    page.reload()  # a new session: what it shows comes from the file, not from the form
    shown(page, lambda s: s.locator("[data-testid='stDataFrame'] td", has_text="0.35"))
    # Still signed in after the reload (issue 35: the sign-in vanished on F5).
    shown(page, lambda s: s.sidebar.get_by_text("Signed in as ada (admin)"))
    choose(page, "Role to change", "judge")
    expect(temperature(screen(page))).to_have_count(1)
    expect(temperature(screen(page))).to_have_value("0.35")

    analyst = new_page(browser)
    try:
        goto(analyst, server, "settings")
        sign_in(analyst, "al", "analyst")
        assert_no_exception(analyst, server)
        shown(analyst, lambda s: s.main.get_by_text("to change settings you need the role admin"))
        # the same settings, read-only
        shown(analyst, lambda s: s.main.locator("[data-testid='stDataFrame'] td", has_text="0.35"))
        other = screen(analyst).main
        assert other.locator("input, textarea, [role='combobox'], [role='switch']").count() == 0
        labels = {t.strip() for t in other.get_by_role("button").all_inner_texts()} - {""}
        assert labels <= {"Test"}, labels  # only Test connection: no Save settings, no Reload
    finally:
        analyst.context.close()
    assert "temperature = 0.35\n" in server.config.read_text()


def test_only_a_graph_editor_may_delete_a_skill(server, page, browser):
    """An analyst sees the Skills page's Delete disabled with the reason, and no upload; an
    author in another browser deletes the SKILL (the positive control: the check can fail)."""
    from store import repo
    from store.db import make_engine

    page.goto(f"{server.url}/skills")
    idle(page)
    sign_in(page, "al", "analyst")
    screen(page).locator("[data-testid='stExpander']", has_text="Delete refunds").locator(
        "summary").click()
    box = screen(page).locator("[data-testid='stExpander']", has_text="Delete refunds")
    expect(box.get_by_role("button", name="Delete refunds")).to_be_disabled()
    expect(box).to_contain_text("to edit graphs you need the role author or admin")
    uploads = screen(page).locator("[data-testid='stExpander']", has_text="Upload SKILLs")
    expect(uploads).to_contain_text("to edit graphs you need the role", use_inner_text=False)
    assert_no_exception(page, server)

    with signed_in_elsewhere(browser, server, "skills", "otto", "author") as author:
        screen(author).locator("[data-testid='stExpander'] summary", has_text="Delete refunds").click()
        idle(author)
        delete = screen(author).get_by_role("button", name="Delete refunds")
        expect(delete).to_be_enabled()
        delete.click()
        # Read the store only once the page says the deletion is done (issue 32 item 8: the
        # store was read right after the click, before the page's write had finished).
        shown(author, lambda s: s.get_by_text("Deleted refunds: 1 version hidden"), timeout=60_000)
        shown(author, lambda s: s.get_by_text("No SKILLs in the store yet"))
        assert_no_exception(author, server)
    eng = make_engine(server.db_url)
    try:
        assert repo.skill_names(eng) == []
    finally:
        eng.dispose()


def _seed_replay(eng) -> None:
    from store import audit_repo

    from .flows import demo_cases, demo_index_data

    import_index(eng, demo_index_data())
    audit_repo.save_cases(eng, "demo", demo_cases(), actor=COMMAND_LINE)


@pytest.fixture
def replay_server(tmp_path):
    from .judge_server import scripted_judge

    # A re-run without a verdict cannot be stored (issue #35): the judge is a scripted one.
    with scripted_judge() as (_judge, env):
        srv = start_server(tmp_path, _seed_replay, env)
        yield srv
        srv.stop()


@pytest.mark.parametrize("role,may_store", [("annotator", False), ("analyst", True)])
def test_only_an_analyst_may_store_a_replay_result(replay_server, browser, role, may_store):
    """Issue #16: a re-run on Replay is a preview; storing it writes an audit result, which an
    annotator may not do (no "Store this result", the reason instead) and an analyst may (the
    positive control: the check can fail). The analyst's press stores a run of its own."""
    from store import audit_repo
    from store.db import make_engine

    from .flows import demo_cases

    server = replay_server
    case = demo_cases()[0].id
    page = new_page(browser)
    try:
        goto(page, server, f"replay?dataset=demo&case={case}")
        sign_in(page, f"the {role}", role)
        choose(page, "Judge", "whole")  # the scripted judge: a verdict there is to store
        screen(page).get_by_role("button", name=re.compile(r"Run audit \(preview\)")).click()
        # The preview is what the user waits for; a judged run takes over a minute on a
        # loaded machine (each look waits for the run to end first).
        shown(page, lambda s: s.get_by_text("New (not stored)"))
        store = screen(page).get_by_role("button", name="Store this result")
        reason = screen(page).get_by_text("to store audit results you need the role")
        assert_no_exception(page, server)
        if not may_store:
            expect(store).to_have_count(0)
            shown(page, lambda s: s.get_by_text("to store audit results you need the role"))
            return
        expect(reason).to_have_count(0)
        store.first.click()
        shown(page, lambda s: s.get_by_text("Stored the new cdg result"))
        assert_no_exception(page, server)
    finally:
        page.context.close()
    eng = make_engine(server.db_url)
    try:
        assert [r for r in audit_repo.runs(eng, "demo") if r.startswith(f"replay-{case}-")]
    finally:
        eng.dispose()
