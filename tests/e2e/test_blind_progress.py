"""Issue #45, item 4, in real Chromium against a real server: annotator ann, on Progress &
agreement, sees no count that moves when annotator bea labels (the report: bea's label of a
rule ann had labelled turned "unanimous 0" into "unanimous 1" on ann's screen), while a
reviewer's view of the same page does move (the positive control)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from .conftest import Server  # noqa: E402
from .flows import assert_no_exception, settle  # noqa: E402
from .identity import sign_in, signed_in_elsewhere  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path):
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex
    from workbench.identity.roles import COMMAND_LINE

    db_url = f"sqlite:///{tmp_path / 'e2e.db'}"
    eng = make_engine(db_url)
    repo.import_index(eng, PolicyIndex.from_dict(refund_index_dict()), actor=COMMAND_LINE)
    eng.dispose()
    srv = Server(db_url, tmp_path / "server.log")
    srv.wait()
    yield srv
    srv.stop()


def task(page, name: str) -> None:
    page.get_by_text(name, exact=True).click()
    settle(page)


def label_first_rule(page) -> None:
    """Label the rule the queue opens on (R1) correct with its key; the card moves to 2/4."""
    card = page.locator("[data-testid='wb-rule-card']")
    expect(card).to_contain_text("1/4", timeout=30_000)
    settle(page)
    page.keyboard.press("y")
    expect(card).to_contain_text("2/4", timeout=30_000)
    settle(page)


def progress_view(page) -> str:
    """What Progress & agreement shows: the main area's text, and every table cell (the
    grids draw on a canvas; their cells are in an accessibility table)."""
    task(page, "Rule correctness")  # leave and come back: a fresh run reads the store again
    task(page, "Progress & agreement")
    main = page.locator("[data-testid='stMain']")
    main.get_by_role("heading", name="Your progress").or_(
        main.get_by_role("heading", name="Progress per annotator")).wait_for()
    page.locator("[data-testid='stDataFrame'] td").first.wait_for(state="attached")

    def read() -> str:
        cells = page.locator("[data-testid='stDataFrame'] td").all_text_contents()
        return main.inner_text() + "\n" + " | ".join(cells)

    # The grids attach their accessibility cells one after another after the run ends: read
    # until two reads 0.5 s apart agree (a read taken mid-way missed the agreement table).
    seen = read()
    for _ in range(20):
        page.wait_for_timeout(500)
        now = read()
        if now == seen:
            return now
        seen = now
    return seen


def test_ann_sees_no_count_move_when_bea_labels(server, page, browser):
    page.goto(f"{server.url}/annotate")
    settle(page)
    sign_in(page, "ann", "annotator")
    label_first_rule(page)  # ann labels R1 correct
    before = progress_view(page)
    assert_no_exception(page, server)
    assert "unanimous" not in before and "bea" not in before
    assert "ann" in before and "Agreement and the queue's counts are shown once" in before

    with signed_in_elsewhere(browser, server, "annotate", "rita", "reviewer") as rita:
        reviewer_before = progress_view(rita)
        assert "unanimous 0, adjudicated 0, open 4" in reviewer_before

        with signed_in_elsewhere(browser, server, "annotate", "bea", "annotator") as bea:
            label_first_rule(bea)  # bea labels R1 correct too: unanimous
            assert "unanimous" not in progress_view(bea)  # blind for bea as well

        after = progress_view(page)
        assert after == before, "ann's view moved when bea labelled"
        # The positive control: the same page for a reviewer shows bea's label counted.
        reviewer_after = progress_view(rita)
        assert "unanimous 1, adjudicated 0, open 3" in reviewer_after
        assert "bea" in reviewer_after and "bea" not in reviewer_before
    assert page.external_requests == []
