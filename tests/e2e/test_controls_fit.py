"""Issue 44 item 3 in real Chromium: on the demo workspace, at a laptop's 1280×800 and at
800×900, no button's label is cut on Review, Annotate, Replay, Evaluate and Settings, and
the keyboard-hint row stays inside its column. With ``WORKBENCH_SCREENSHOTS=1`` it also takes
``docs/screenshots/<page>-<w>x<h>.png``: the window, scrolled to the controls in question.

A cut label is what Streamlit does to a label wider than its button: the label element gets
``overflow: hidden; text-overflow: ellipsis``, so its ``scrollWidth`` exceeds its
``clientWidth`` ("Confirm ver…"). Each visible button's label element (and the elements
inside it) is measured; so is each ``.wb-keys`` legend against its column.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .conftest import ROOT, Server, demo_index, seed_database
from .flows import assert_no_exception, goto, settle
from .identity import sign_in
from .test_all_pages import seed_demo_run

pytestmark = pytest.mark.e2e

SIZES = [(1280, 800), (800, 900)]
PAGES = ["review", "annotate", "replay", "evaluate", "settings"]
SHOTS = ROOT / "docs" / "screenshots"

# Every visible button whose label (or an element in it) is wider than its box; every key
# legend whose hints run past its column. Hidden buttons (a closed expander, another tab)
# have no client rects and are skipped.
_OVERFLOWS = """() => {
  const cut = (el) => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
  const out = [];
  for (const b of document.querySelectorAll("button")) {
    if (!b.getClientRects().length || b.offsetWidth === 0) continue;
    const label = b.querySelector("[data-testid='stMarkdownContainer']") || b;
    const parts = [b, label, ...label.querySelectorAll("p, span, div")];
    const bad = parts.find(cut);
    if (bad) out.push(`button "${b.innerText.trim().replace(/\\s+/g, " ")}": `
                      + `${bad.scrollWidth} px of text in ${bad.clientWidth} px`);
  }
  for (const row of document.querySelectorAll(".wb-keys")) {
    const box = row.getBoundingClientRect();
    const col = (row.closest("[data-testid='stVerticalBlock']") || row.parentElement)
      .getBoundingClientRect();
    const right = Math.max(...[...row.children].map((c) => c.getBoundingClientRect().right));
    if (cut(row) || right > Math.min(box.right, col.right) + 1)
      out.push(`key hints "${row.innerText.trim()}": run to ${Math.round(right)} px, `
               + `column ends at ${Math.round(col.right)} px`);
  }
  return out;
}"""


# What each screenshot shows: the controls this test is about, scrolled into the window
# (the top of the page when the element is missing).
FOCUS = {
    "review": (".st-key-rv_decisions", "center"),
    "annotate": (".st-key-rc_correct", "center"),
    "replay": ("[data-testid='stCaptionContainer']:has-text('Colour = modality')", "start"),
    "evaluate": ("[class*='st-key-ev_cal_'][class*='_rel']", "center"),
    "settings": (".st-key-settings_test_judge", "center"),
}

# Cut labels outside the files this test came with, each named with where it is drawn; they
# are printed, not failed, until that file is fixed (then delete the entry).
ELSEWHERE: dict[tuple[str, str], str] = {}  # controls cut by code this test cannot fix


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("controls_fit")
    db = f"sqlite:///{tmp / 'e2e.db'}"
    seed_database(db, demo_index())
    seed_demo_run(db)
    srv = Server(db, tmp / "server.log")
    srv.wait()
    yield srv
    srv.stop()


def _show_everything(page) -> None:
    """Open the page's expanders, so buttons inside them are measured too."""
    closed = "[data-testid='stMain'] [data-testid='stExpander'] details:not([open]) > summary"
    for summary in page.locator(closed).all():
        try:
            summary.click(timeout=5_000)
        except Exception:  # an expander that a rerun replaced: measured as it stands
            continue
    settle(page)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_control_is_cut(browser, server, size):
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(90_000)
    problems: dict[str, list[str]] = {}
    try:
        goto(page, server, "review")
        sign_in(page, "ann", "admin")  # decisions enabled, Annotate's tasks shown
        for url_path in PAGES:
            goto(page, server, url_path)
            if url_path == "annotate":  # an admin opens on adjudication: show the rule queue
                page.get_by_text("Only disagreements").click()
                settle(page)
            page.wait_for_timeout(2500)  # charts and drawings finish their first layout
            assert_no_exception(page, server)
            if os.environ.get("WORKBENCH_SCREENSHOTS"):  # refresh docs/screenshots on request
                where, block = FOCUS[url_path]
                focus = page.locator(where).first
                if focus.count():
                    focus.evaluate("(e, block) => e.scrollIntoView({block})", block)
                    page.wait_for_timeout(500)
                page.screenshot(path=str(SHOTS / f"{url_path}-{width}x{height}.png"))
            _show_everything(page)
            page.wait_for_timeout(1000)
            found = page.evaluate(_OVERFLOWS)
            for (where, label), why in ELSEWHERE.items():
                # The label, then its shortcut key if it has one: 'button "wrong action 3": ...'
                known = [f for f in found if where == url_path
                         and re.match(rf'button "{re.escape(label)}( \S)?":', f)]
                for line in known:
                    print(f"\nknown, not failed: {line} ({why})")
                found = [f for f in found if f not in known]
            if found:
                problems[url_path] = found
            if os.environ.get("FIT_FULL_SHOTS"):  # the whole page, to look at by eye
                page.set_viewport_size({"width": width, "height": 4000})
                page.wait_for_timeout(1500)
                out = Path(os.environ["FIT_FULL_SHOTS"])
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / f"{url_path}-{width}-full.png"))
                page.set_viewport_size({"width": width, "height": height})
        total = sum(len(v) for v in problems.values())
        print(f"\n{width}x{height}: {total} cut control(s)",
              {p: len(problems.get(p, [])) for p in PAGES})
        assert not problems, "\n".join(f"{p}: {line}" for p, lines in problems.items() for line in lines)
    finally:
        context.close()
