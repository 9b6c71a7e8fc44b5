"""The Graph page's drawing (``components.rule_graph``, vis-network in the app's own page) as
a test sees it: where each rule is drawn, and a real mouse click on one. Read through
``tests/e2e/screen.py``: on an idle page, re-read after each rerun."""

from __future__ import annotations

from .screen import screen, until

DRAWING = "graph_drawing"

_POSITIONS = """(key) => {
  const n = (window.__wbRuleGraphs || {})[key];
  if (!n) return null;
  const ids = n.body.data.nodes.getIds();
  const at = n.getPositions(ids);
  const box = n.body.container.getBoundingClientRect();
  return ids.map((id) => { const d = n.canvasToDOM(at[id]);
                           return {id: String(id), x: box.left + d.x, y: box.top + d.y}; });
}"""

_DRAWN = """([key, n]) => { const g = document.querySelector("[data-testid='wb-rule-graph']");
  return window.__wbRuleGraphs && window.__wbRuleGraphs[key] && g
    && (n === null || Number(g.dataset.rules) === n); }"""


def wait_drawn(page, rules: int | None = None, key: str = DRAWING, timeout: float = 60_000) -> None:
    """Until the drawing is made (of ``rules`` rules when given), on an idle page."""
    until(page, _DRAWN, [key, rules], timeout=timeout)


def positions(page, key: str = DRAWING) -> dict[str, tuple[float, float]]:
    """Each drawn rule's centre in the window's coordinates (as the mouse sees it), read on
    an idle page."""
    return {p["id"]: (p["x"], p["y"]) for p in screen(page).evaluate(_POSITIONS, key) or []}


# Streamlit scrolls its main area, not the window: find the drawing's scrolling ancestor.
_SCROLL = """([key, y]) => {
  let el = window.__wbRuleGraphs[key].body.container;
  while (el && !(el.scrollHeight > el.clientHeight
                 && /(auto|scroll)/.test(getComputedStyle(el).overflowY))) el = el.parentElement;
  (el || document.scrollingElement).scrollBy(0, y - window.innerHeight / 2);
}"""

_HAS = """([key, id]) => { const n = (window.__wbRuleGraphs || {})[key];
  return !!n && n.body.data.nodes.getIds().map(String).includes(id); }"""


def click_rule(page, rule_id: str, key: str = DRAWING, timeout: float = 30_000) -> None:
    """Scroll the rule into the middle of the window and click it with the mouse, once it is
    drawn on an idle page (a rerun may redraw the graph just after ``wait_drawn``)."""
    until(page, _HAS, [key, rule_id], timeout=timeout)
    _, y = positions(page, key)[rule_id]
    page.evaluate(_SCROLL, [key, y])
    x, y = positions(page, key)[rule_id]
    assert 0 < y < page.viewport_size["height"], f"{rule_id} is not in the window (y={y})"
    page.mouse.click(x, y)
