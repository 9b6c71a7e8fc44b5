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

from .conftest import IDLE_CEILING_MS, PAGE_CEILING_MS  # noqa: E402
from .flows import assert_no_exception, choose, goto, import_index, settle, start_server  # noqa: E402
from .identity import sign_in, signed_in_elsewhere  # noqa: E402

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
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    settle(page)
    page.locator("h1", has_text=title).first.wait_for()


def task(page, name: str) -> None:
    page.get_by_text(name, exact=True).click()
    settle(page)


def leaks(page) -> list[str]:
    """Annotator A's words anywhere in the DOM (data grids keep their cells in an
    accessibility table, so the page source holds what the canvas draws)."""
    html = page.content()
    return [s for s in (SECRET_NOTE, SECRET_RULE) if s in html]


def test_annotator_b_never_sees_annotator_a_labels(server, page, browser):
    page.goto(f"{server.url}/annotate")
    settle(page)
    sign_in(page, "bob", "annotator")
    card = page.locator("[data-testid='wb-rule-card']")
    expect(card).to_contain_text("1/4", timeout=30_000)
    assert leaks(page) == []
    page.keyboard.press("y")  # bob labels R1, which ada labelled too
    expect(card).to_contain_text("2/4", timeout=30_000)
    settle(page)
    page.keyboard.press("k")  # back to R1: only bob's own label
    page.get_by_text("Your label: correct").wait_for()
    page.get_by_text("never shown to you").wait_for()
    assert leaks(page) == []
    for name in ("Reference inventory", "CDG inspection", "Progress & agreement"):
        task(page, name)
        assert_no_exception(page, server)
        assert leaks(page) == [], name
    task(page, "Dataset report")
    page.get_by_text("you need the role reviewer or admin").wait_for()
    assert page.get_by_role("button", name="Build report").count() == 0
    assert leaks(page) == []

    assert page.external_requests == []

    # The same views, for a reviewer in another browser, do show ada's labels: the checks
    # above can fail.
    with signed_in_elsewhere(browser, server, "annotate", "rita", "reviewer") as rita:
        # R1 is now a disagreement (ada: incorrect, bob: correct), first in the reviewer's queue.
        expect(rita.locator("[data-testid='wb-rule-card']")).to_contain_text("R1", timeout=30_000)
        rita.locator("[data-testid='stDataFrame'] td", has_text=SECRET_NOTE).first.wait_for(
            state="attached")
        task(rita, "Reference inventory")
        rita.locator("[data-testid='stDataFrame'] td", has_text=SECRET_RULE).first.wait_for(
            state="attached")


def test_annotator_cannot_save_a_graph(server, page):
    page.goto(f"{server.url}/graph")
    settle(page)
    sign_in(page, "ann", "annotator")
    expect(page.get_by_role("button", name="Save as new version")).to_be_disabled()
    page.get_by_text("you need the role author or admin").first.wait_for()


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
    main = page.locator("[data-testid='stMain']")
    choose(page, "Role to change", "judge")
    settle(page)
    temperature = main.get_by_role("spinbutton", name="Temperature")
    # While the form for the chosen role replaces the previous one, both can be in the page
    # for a moment (seen once under load): wait for the one form before typing.
    expect(temperature).to_have_count(1)
    expect(temperature).to_have_value("0.01")
    for attempt in range(3):
        temperature.fill("0.35")
        page.keyboard.press("Tab")  # a number input applies its value on blur (focus is in it)
        settle(page)
        try:
            expect(temperature).to_have_value("0.35")
            break
        except AssertionError:
            # Seen in a fresh-clone run: the value went back to 0.01, because the role
            # choice's rerun replaced the form after the typing (the user sees that and types
            # again; so does the test). Three times in a row would be a real defect.
            if attempt == 2:
                raise
    saved = main.get_by_text("Saved judge")
    main.get_by_role("button", name="Save settings").click()
    settle(page)
    try:
        saved.wait_for(timeout=30_000)
    except Exception:
        # Once in ten runs beside three CPU burners the click landed while the blur's rerun
        # was still replacing the form and nothing was saved: click once more, but only if
        # the file is untouched (a save that happened must show its message, or fail here).
        assert "temperature = 0.35" not in server.config.read_text(), "saved without saying so"
        main.get_by_role("button", name="Save settings").click()
        settle(page)
        saved.wait_for()
    assert_no_exception(page, server)
    assert "temperature = 0.35\n" in server.config.read_text()
    assert server.config.read_text().startswith("# the team's settings\n")

    page.reload()  # a new session: what it shows comes from the file, not from the form
    settle(page)
    page.locator("[data-testid='stDataFrame'] td", has_text="0.35").first.wait_for(
        state="attached")
    # Still signed in after the reload (issue 35: the sign-in vanished on F5).
    page.locator("[data-testid='stSidebar']").get_by_text("Signed in as ada (admin)").wait_for()
    choose(page, "Role to change", "judge")
    settle(page)
    expect(main.get_by_role("spinbutton", name="Temperature")).to_have_count(1)
    expect(main.get_by_role("spinbutton", name="Temperature")).to_have_value("0.35")

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        analyst = context.new_page()
        goto(analyst, server, "settings")
        sign_in(analyst, "al", "analyst")
        assert_no_exception(analyst, server)
        other = analyst.locator("[data-testid='stMain']")
        other.get_by_text("to change settings you need the role admin").wait_for()
        other.locator("[data-testid='stDataFrame'] td", has_text="0.35").first.wait_for(
            state="attached")  # the same settings, read-only
        assert other.locator("input, textarea, [role='combobox'], [role='switch']").count() == 0
        labels = {t.strip() for t in other.get_by_role("button").all_inner_texts()} - {""}
        assert labels <= {"Test"}, labels  # only Test connection: no Save settings, no Reload
    finally:
        context.close()
    assert "temperature = 0.35\n" in server.config.read_text()


def test_only_a_graph_editor_may_delete_a_skill(server, page, browser):
    """An analyst sees the Skills page's Delete disabled with the reason, and no upload; an
    author in another browser deletes the SKILL (the positive control: the check can fail)."""
    from store import repo
    from store.db import make_engine

    page.goto(f"{server.url}/skills")
    settle(page)
    sign_in(page, "al", "analyst")
    box = page.locator("[data-testid='stExpander']", has_text="Delete refunds")
    box.locator("summary").click()
    settle(page)
    expect(box.get_by_role("button", name="Delete refunds")).to_be_disabled()
    expect(box).to_contain_text("to edit graphs you need the role author or admin")
    uploads = page.locator("[data-testid='stExpander']", has_text="Upload SKILLs")
    expect(uploads).to_contain_text("to edit graphs you need the role", use_inner_text=False)
    assert_no_exception(page, server)

    with signed_in_elsewhere(browser, server, "skills", "otto", "author") as author:
        author.locator("[data-testid='stExpander'] summary", has_text="Delete refunds").click()
        settle(author)
        delete = author.get_by_role("button", name="Delete refunds")
        expect(delete).to_be_enabled()
        delete.click()
        # Read the store only once the page says the deletion is done (issue 32 item 8: the
        # store was read right after the click, before the page's write had finished).
        author.get_by_text("Deleted refunds: 1 version hidden").wait_for(timeout=60_000)
        author.get_by_text("No SKILLs in the store yet").wait_for()
        settle(author)
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
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_CEILING_MS)  # as the suite's page fixture
        goto(page, server, f"replay?dataset=demo&case={case}")
        sign_in(page, f"the {role}", role)
        choose(page, "Judge", "whole")  # the scripted judge: a verdict there is to store
        page.get_by_role("button", name=re.compile(r"Run audit \(preview\)")).click()
        settle(page)
        # settle can return before the click's run has started; the preview is what the
        # user waits for, and a judged run takes over a minute on a loaded machine.
        page.get_by_text("New (not stored)").first.wait_for(timeout=IDLE_CEILING_MS)
        store = page.get_by_role("button", name="Store this result")
        reason = page.get_by_text("to store audit results you need the role")
        assert_no_exception(page, server)
        if not may_store:
            expect(store).to_have_count(0)
            reason.first.wait_for()
            return
        expect(reason).to_have_count(0)
        store.first.click()
        settle(page)
        page.get_by_text("Stored the new cdg result").wait_for()
        assert_no_exception(page, server)
    finally:
        context.close()
    eng = make_engine(server.db_url)
    try:
        assert [r for r in audit_repo.runs(eng, "demo") if r.startswith(f"replay-{case}-")]
    finally:
        eng.dispose()
