"""Issues 44 item 3 and 56 item 3 in real Chromium: on the demo workspace, at a laptop's
1280×800 and at 800×900, no button's label is cut on any page checked here, no label, metric
or heading is cut on the pages of issue 56 (Skills, Graph, Contracts, Glossary, Settings,
Annotate and the sidebar), the keyboard-hint row stays inside its column, and the sidebar
folds away below 1,000 px (its 300 px left the Graph's rule panel ~110 px at 800 px). With
``WORKBENCH_SCREENSHOTS=1`` it also takes ``docs/screenshots/<page>-<w>x<h>.png``: the
window, scrolled to the controls in question.

A cut label is what Streamlit does to text wider than its box: the element gets ``overflow:
hidden; text-overflow: ellipsis``, so its ``scrollWidth`` exceeds its ``clientWidth``
("Confirm ver…", "No-rejectio…"). Each visible button's label element (and the elements
inside it) is measured; on the pages of issue 56 every other element drawn with an ellipsis
too (metric labels and values, widget labels, expander and tab titles); so is each
``.wb-keys`` legend against its column.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .conftest import ROOT, demo_server, seed_demo_run
from .flows import assert_no_exception, goto
from .identity import sign_in
from .screen import idle, new_page, screen, shown

pytestmark = pytest.mark.e2e

SIZES = [(1280, 800), (800, 900)]
# Issue 56's pages (every cut text), then issue 44's (cut buttons).
TEXT_PAGES = ["skills", "graph", "contracts", "glossary", "settings", "annotate"]
PAGES = [*TEXT_PAGES, "review", "replay", "evaluate"]
SHOTS = ROOT / "docs" / "screenshots"
NARROW = 1000  # components.narrow_window.BELOW

# Every visible button whose label (or an element in it) is wider than its box; with
# `everything`, every other visible element drawn with an ellipsis that cuts its text; every
# key legend whose hints run past its column. Hidden elements (a closed expander, another
# tab, the folded sidebar) have no client rects and are skipped.
_OVERFLOWS = """(everything) => {
  const cut = (el) => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
  const seen = (el) => el.getClientRects().length && el.offsetWidth > 0
    && el.getBoundingClientRect().right > 0;
  const text = (el) => el.innerText.trim().replace(/\\s+/g, " ");
  const out = [];
  for (const b of document.querySelectorAll("button")) {
    if (!seen(b)) continue;
    const label = b.querySelector("[data-testid='stMarkdownContainer']") || b;
    const parts = [b, label, ...label.querySelectorAll("p, span, div")];
    const bad = parts.find(cut);
    if (bad) out.push(`button "${text(b)}": ${bad.scrollWidth} px of text in ${bad.clientWidth} px`);
  }
  if (everything) {
    const roots = "[data-testid='stMain'] *, [data-testid='stSidebar'] *";
    for (const el of document.querySelectorAll(roots)) {
      if (el.closest("button, [data-testid='stDataFrame'], [data-testid='stCode'], textarea, input")
          || !seen(el) || !text(el)) continue;
      const style = getComputedStyle(el);
      if (style.textOverflow === "ellipsis" && cut(el)) {
        const owner = el.closest("[data-testid]");
        out.push(`text "${text(el).slice(0, 60)}" (${owner ? owner.dataset.testid : el.tagName}): `
                 + `${el.scrollWidth} px of text in ${el.clientWidth} px`);
      }
    }
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

# The sidebar's right edge on screen (0 or less: folded away).
_SIDEBAR_RIGHT = """() => { const s = document.querySelector("[data-testid='stSidebar']");
  return s ? s.getBoundingClientRect().right : null; }"""

# What each screenshot shows: the controls this test is about, scrolled into the window
# (the top of the page when the element is missing).
FOCUS = {
    "review": (".st-key-rv_decisions", "center"),
    "annotate": (".st-key-rc_correct", "center"),
    "replay": ("[data-testid='stCaptionContainer']:has-text('Colour = modality')", "start"),
    "evaluate": ("[class*='st-key-ev_cal_'][class*='_rel']", "center"),
    "settings": (".st-key-settings_test_judge", "center"),
    "skills": (".st-key-skills_totals", "center"),
    "graph": ("[data-testid='stForm']:has-text('Edit MOR-S009')", "start"),
    "contracts": (".st-key-contracts_summary", "start"),
    "glossary": ("h1", "start"),
}
# Where a page opens for the check: the Graph on the demo's big SKILL and the rule of the
# edit-impact example, whose panel holds the longest edge buttons.
OPEN = {"graph": "graph?skill=merchant-order-refund&rule=MOR-S009"}

# Cut labels outside the files this test came with, each named with where it is drawn; they
# are printed, not failed, until that file is fixed (then delete the entry).
ELSEWHERE: dict[tuple[str, str], str] = {}  # controls cut by code this test cannot fix


server = demo_server("controls_fit", seed_demo_run)


def _show_everything(page) -> None:
    """Open the page's expanders, so what is inside them is measured too."""
    closed = "[data-testid='stMain'] [data-testid='stExpander'] details:not([open]) > summary"
    for _ in range(40):  # a ceiling: an expander that opens more expanders is fine
        summaries = screen(page).locator(closed)
        if not summaries.count():
            return
        summaries.first.click()


def _screenshot(page, url_path: str, width: int, height: int) -> None:
    where, block = FOCUS[url_path]
    focus = screen(page).locator(where).first
    if focus.count():
        focus.evaluate("(e, block) => e.scrollIntoView({block})", block)
        idle(page)
    page.screenshot(path=str(SHOTS / f"{url_path}-{width}x{height}.png"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_control_is_cut(browser, server, size):
    width, height = size
    page = new_page(browser, width, height)
    problems: dict[str, list[str]] = {}
    try:
        # Signed in on a page that reruns nothing once drawn (Review rewrites its address and
        # reruns after its first run, which closed the role list under load).
        goto(page, server, "glossary")
        sign_in(page, "ann", "admin")  # decisions enabled, Annotate's tasks shown
        for url_path in PAGES:
            goto(page, server, OPEN.get(url_path, url_path))
            if url_path == "annotate":  # an admin opens on adjudication: show the rule queue
                screen(page).get_by_text("Only disagreements").click()
            if url_path == "graph":
                shown(page, lambda s: s.get_by_role("heading", name="Rule MOR-S009"))
            assert_no_exception(page, server)
            # A fresh page load: the window decides the sidebar (components.narrow_window).
            right = screen(page).evaluate(_SIDEBAR_RIGHT)
            if width < NARROW:
                assert right is not None and right <= 0, f"{url_path}: sidebar open at {width} px"
            else:
                assert right is not None and right >= 250, f"{url_path}: no sidebar at {width} px"
            if os.environ.get("WORKBENCH_SCREENSHOTS"):  # refresh docs/screenshots on request
                _screenshot(page, url_path, width, height)
            _show_everything(page)
            found = screen(page).evaluate(_OVERFLOWS, url_path in TEXT_PAGES)
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
                idle(page)
                out = Path(os.environ["FIT_FULL_SHOTS"])
                out.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out / f"{url_path}-{width}-full.png"))
                page.set_viewport_size({"width": width, "height": height})
        total = sum(len(v) for v in problems.values())
        print(f"\n{width}x{height}: {total} cut control(s)",
              {p: len(problems.get(p, [])) for p in PAGES})
        assert not problems, "\n".join(f"{p}: {line}" for p, lines in problems.items() for line in lines)
    finally:
        page.context.close()
