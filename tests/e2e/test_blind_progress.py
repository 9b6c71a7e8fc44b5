"""Issue #45, item 4, in real Chromium against a real server: annotator ann, on Progress &
agreement, sees no count that moves when annotator bea labels (the report: bea's label of a
rule ann had labelled turned "unanimous 0" into "unanimous 1" on ann's screen), while a
reviewer's view of the same page does move (the positive control)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from .conftest import Server  # noqa: E402
from .flows import assert_no_exception  # noqa: E402
from .identity import sign_in, signed_in_elsewhere  # noqa: E402
from .screen import idle, screen, shown  # noqa: E402

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
    screen(page).get_by_text(name, exact=True).click()
    idle(page)


def label_first_rule(page) -> None:
    """Label the rule the queue opens on (R1) correct with its key; the card moves to 2/4."""
    shown(page, lambda s: s.locator("[data-testid='wb-rule-card']", has_text="1/4"))
    page.keyboard.press("y")
    shown(page, lambda s: s.locator("[data-testid='wb-rule-card']", has_text="2/4"))


def progress_view(page) -> str:
    """What Progress & agreement shows: the main area's text, and every table cell (the
    grids draw on a canvas; their cells are in an accessibility table). Read once the page
    is idle: that includes the grids having attached their cells (they do so after the run
    ends, one after another; a read taken mid-way missed the agreement table)."""
    task(page, "Rule correctness")  # leave and come back: a fresh run reads the store again
    task(page, "Progress & agreement")
    shown(page, lambda s: s.main.get_by_role("heading", name="Your progress").or_(
        s.main.get_by_role("heading", name="Progress per annotator")))
    shown(page, lambda s: s.locator("[data-testid='stDataFrame'] td"))
    view = screen(page)
    cells = view.locator("[data-testid='stDataFrame'] td").all_text_contents()
    return view.main.inner_text() + "\n" + " | ".join(cells)


def test_ann_sees_no_count_move_when_bea_labels(server, page, browser):
    page.goto(f"{server.url}/annotate")
    idle(page)
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
