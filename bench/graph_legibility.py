"""Legibility of the Graph page's drawing at every size (issue 35 item 4), measured in Chromium.

For each demo SKILL drawn whole (airline 63 rules, retail 49, merchant 225), and for focused
views of about 50 rules, prints the size on screen of a rule's label in the new drawing
(``components.rule_graph``: layered, wrapped rows, scale 1) beside the old one (pyvis's force
layout fitted into a 560-px iframe, ``components.graph_view.graph_html``): the label's height
in CSS pixels is vis-network's font size times the view's scale. Writes screenshots of the
whole airline and merchant graphs to ``docs/screenshots/``.

Run: ``python bench/graph_legibility.py`` (about a minute; needs /usr/bin/chromium).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402
from tests.e2e.graph_drawing import wait_drawn  # noqa: E402
from tests.e2e.screen import idle  # noqa: E402
from workbench.identity.roles import COMMAND_LINE  # noqa: E402

FONT_PX = 14  # the label font of both drawings
SHOTS = ROOT / "docs" / "screenshots"
WHOLE = {"airline-policy": "graph-airline-63-rules.png",
         "merchant-order-refund": "graph-merchant-225-rules.png", "retail-policy": None}


def seed(url: str) -> None:
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex

    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.load(ROOT / "fixtures/demo/index.json"), actor=COMMAND_LINE)
    eng.dispose()


def old_scale(browser, skill, ids: list[str]) -> float:
    """The fitted scale of the old iframe drawing once its layout has settled."""
    from components.graph_view import graph_html

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_content(graph_html(skill, ids))
    page.wait_for_function("() => typeof network !== 'undefined' && network")
    last, scale = None, None
    for _ in range(60):  # stabilisation, then fit: two equal readings
        page.wait_for_timeout(500)
        scale = page.evaluate("() => network.getScale()")
        if scale == last:
            break
        last = scale
    page.close()
    return scale


def main() -> None:
    from playwright.sync_api import sync_playwright

    from workbench.graph import PolicyIndex

    index = PolicyIndex.load(ROOT / "fixtures/demo/index.json")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        url = f"sqlite:///{tmp}/legibility.db"
        seed(url)
        server = Server(url, Path(tmp) / "server.log")
        server.wait()
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # Tall enough that the whole drawing is on screen for its screenshot.
            page = browser.new_page(viewport={"width": 1400, "height": 3400})
            for name, shot in WHOLE.items():
                skill = index[name]
                page.goto(f"{server.url}/graph?skill={name}")
                idle(page, 120_000)
                page.get_by_text("whole graph", exact=True).click()
                idle(page, 120_000)
                wait_drawn(page, len(skill.graph))
                drawing = page.locator("[data-testid='wb-rule-graph']")
                box = drawing.bounding_box()
                scale = page.evaluate("() => window.__wbRuleGraphs.graph_drawing.getScale()")
                if shot:
                    SHOTS.mkdir(parents=True, exist_ok=True)
                    drawing.screenshot(path=str(SHOTS / shot))
                before = old_scale(browser, skill, list(skill.graph.rules))
                rows.append((f"{name} whole", len(skill.graph), FONT_PX * scale, FONT_PX * before,
                             f"{box['width']:.0f}x{box['height']:.0f}", shot or ""))
            # "dependants of MOR-R003" (50 rules) was a speck and a line.
            skill = index["merchant-order-refund"]
            ids = skill.graph.dependants(["MOR-R003"])
            page.goto(f"{server.url}/graph?skill=merchant-order-refund&rule=MOR-R003")
            idle(page, 120_000)
            page.get_by_text("dependants of this rule", exact=True).click()
            idle(page, 120_000)
            wait_drawn(page, len(ids))
            box = page.locator("[data-testid='wb-rule-graph']").bounding_box()
            scale = page.evaluate("() => window.__wbRuleGraphs.graph_drawing.getScale()")
            rows.append(("dependants of MOR-R003", len(ids), FONT_PX * scale,
                         FONT_PX * old_scale(browser, skill, ids),
                         f"{box['width']:.0f}x{box['height']:.0f}", ""))
        finally:
            browser.close()
            server.stop()
    print(f"{'view':<30} {'rules':>5} {'label px now':>13} {'label px before':>16} "
          f"{'drawing (px)':>13}  screenshot")
    for view, n, now, before, size, shot in rows:
        print(f"{view:<30} {n:>5} {now:>13.1f} {before:>16.1f} {size:>13}  {shot}")
    print(json.dumps({"rows": [dict(zip(("view", "rules", "label_px_now", "label_px_before",
                                         "drawing_px", "screenshot"), r, strict=True))
                               for r in rows]}))


if __name__ == "__main__":
    main()
