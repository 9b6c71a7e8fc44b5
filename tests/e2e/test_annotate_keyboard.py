"""An annotator session on the Annotate page driven by the keyboard, in real Chromium against
a real server: signed in through the sidebar, label rules with one key each, move next and
previous, and find every label in the database, under the signed-in name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import refund_index_dict  # noqa: E402

from .conftest import make_server  # noqa: E402
from .identity import sign_in  # noqa: E402
from .screen import idle, screen, shown  # noqa: E402

pytestmark = pytest.mark.e2e

@pytest.fixture
def server(tmp_path):
    srv = make_server(tmp_path, refund_index_dict())
    yield srv
    srv.stop()


def focused_label(page) -> str:
    # Where the keyboard focus is: browser state, not the render (a Tab reruns nothing), so
    # read at once rather than through screen(), which waits out each key press.
    return page.evaluate("document.activeElement && (document.activeElement.getAttribute("
                         "'aria-label') || document.activeElement.textContent || '')")


def tab_to(page, label: str, limit: int = 60) -> None:
    """Press Tab until the field called ``label`` has the focus, as a keyboard user would."""
    for _ in range(limit):
        if focused_label(page) == label:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{label!r} never got the keyboard focus")


def press(page, key: str, expect: str) -> None:
    """Press one key, then wait for the rule card to show ``expect`` and the app to settle."""
    page.keyboard.press(key)
    shown(page, lambda s: s.locator("[data-testid='wb-rule-card']", has_text=expect), timeout=30_000)
    idle(page)


def test_an_annotator_session_by_keyboard_only(server, page):
    page.goto(f"{server.url}/annotate")
    idle(page)
    sign_in(page, "ada", "annotator")  # the sidebar identity; the page has no name field
    shown(page, lambda s: s.get_by_text("Annotating as ada"))
    shown(page, lambda s: s.locator("[data-testid='wb-key-legend']"))
    idle(page)
    card = screen(page).locator("[data-testid='wb-rule-card']")
    assert card.inner_text().startswith("1/4")

    press(page, "y", "2/4")  # R1 correct, moves on
    press(page, "3", "3/4")  # R2 incorrect: wrong action
    press(page, "k", "2/4")  # back to R2: its label is shown
    shown(page, lambda s: s.get_by_text("Your label: incorrect (wrong action)"))
    press(page, "j", "3/4")
    # A note: Tab into the field, type, Tab out (committing it), then the label's key.
    tab_to(page, "Note (optional)")
    page.keyboard.type("closure needs the coupon rule")
    page.keyboard.press("Tab")
    idle(page)
    press(page, "7", "4/4")  # R3 incorrect: duplicate, with the note
    page.keyboard.press("y")  # R4 correct; the last rule stays in view
    shown(page, lambda s: s.get_by_text("Your label: correct"))
    idle(page)
    assert page.external_requests == []

    from store.annotation import labels_for
    from store.db import make_engine
    from workbench.annotation.labels import RULE_CORRECTNESS

    eng = make_engine(server.db_url)
    stored = [(lab.item.split("@")[0], lab.value, lab.error_type, lab.note)
              for lab in labels_for(eng, RULE_CORRECTNESS, annotator="ada")]
    eng.dispose()
    assert stored == [
        ("refunds/R1", "correct", None, ""),
        ("refunds/R2", "incorrect", "wrong_action", ""),
        ("refunds/R3", "incorrect", "duplicate", "closure needs the coupon rule"),
        ("refunds/R4", "correct", None, ""),
    ]
