"""Issue #16, item 8, in real Chromium with the dark theme (the browser prefers dark, and
.streamlit/config.toml has a dark variant): the source-text boxes were light grey on
near-white. The computed contrast of their text against the colour actually behind it (every
translucent layer composited down to the page) must be at least 4.5:1 (WCAG AA)."""

from __future__ import annotations

import pytest

from .flows import assert_no_exception, demo_index_data, import_index, start_server
from .screen import new_page, screen, shown

pytestmark = pytest.mark.e2e

# For each element: its text colour and the background seen through all its ancestors
# (alpha-composited from the root down), then the WCAG contrast ratio of the two.
_CONTRAST_JS = """
(sel) => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return [0,0,0,0];
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => { const a = top[3];
    return [0,1,2].map(i => top[i]*a + under[i]*(1-a)).concat([1]); };
  const backdrop = (el) => { const chain = []; for (let e = el; e; e = e.parentElement) chain.push(e);
    let bg = [255,255,255,1];  // the browser canvas under everything
    for (const e of chain.reverse()) bg = over(parse(getComputedStyle(e).backgroundColor), bg);
    return bg; };
  const lum = (c) => { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); };
    return 0.2126*f(c[0]) + 0.7152*f(c[1]) + 0.0722*f(c[2]); };
  return [...document.querySelectorAll(sel)].map(el => {
    const bg = backdrop(el); const fg = over(parse(getComputedStyle(el).color), bg);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    return {ratio: (hi + 0.05) / (lo + 0.05), fg: fg.slice(0,3), bg: bg.slice(0,3),
            page: getComputedStyle(document.querySelector("[data-testid='stApp']")).backgroundColor};
  });
}
"""


@pytest.fixture
def server(tmp_path):
    srv = start_server(tmp_path, lambda eng: import_index(eng, demo_index_data()))
    yield srv
    srv.stop()


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_source_span_boxes_have_readable_contrast(server, browser, tmp_path, scheme):
    page = new_page(browser, color_scheme=scheme)
    try:
        page.goto(f"{server.url}/graph")
        box = shown(page, lambda s: s.locator("[data-testid='wb-source']"), timeout=60_000).first
        assert_no_exception(page, server)
        box.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"graph-{scheme}.png"))
        results = screen(page).evaluate(
            _CONTRAST_JS, "[data-testid='wb-source'], [data-testid='wb-source'] mark")
        assert len(results) >= 2, "expected a source box with at least one highlighted span"
        page_bg = results[0]["page"]
        if scheme == "dark":
            # The theme really is dark (otherwise this test would prove nothing).
            rgb = [int(v) for v in page_bg[page_bg.index("(") + 1:page_bg.index(")")].split(",")[:3]]
            assert sum(rgb) < 3 * 80, f"page background {page_bg} is not dark"
        for r in results:
            assert r["ratio"] >= 4.5, f"{scheme}: text {r['fg']} on {r['bg']} is only {r['ratio']:.2f}:1"
    finally:
        page.context.close()
