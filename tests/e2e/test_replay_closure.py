"""Issue 44 item 6 on Replay, in real Chromium on the demo workspace: the closure is drawn as
the Graph page draws it (``components.rule_graph``), with labels at reading size, the colour
legend, seeds marked, and zoom buttons that cover no rule. The time from opening the page to
the drawings being there is printed (run with ``-s`` to see it)."""

from __future__ import annotations

import json
import os
import time

import pytest
from playwright.sync_api import expect

from .conftest import ROOT, demo_server, seed_demo_run
from .flows import assert_no_exception, goto
from .screen import new_page, screen, until

pytestmark = pytest.mark.e2e

# A case whose closure spans two SKILLs: two drawings, each with its own key.
CASE = "ret-004-return-to-gift-card"
MIN_LABEL_PX = 12  # on screen; the old iframe fitted 30 rules into 380 px: about 7 px

# For each drawing: its scale, the rules' label size on screen, the seeds' labels, and the
# rules whose box (in page coordinates) meets the zoom bar.
_MEASURE = """(key) => {
  const net = window.__wbRuleGraphs[key];
  const root = net.body.container.closest("[data-testid='wb-rule-graph']");
  const canvas = root.querySelector(".wb-rg-canvas").getBoundingClientRect();
  const bar = root.querySelector(".wb-rg-bar").getBoundingClientRect();
  const ids = net.body.data.nodes.getIds();
  const covered = [], labels = [];
  for (const id of ids) {
    const b = net.getBoundingBox(id);
    const tl = net.canvasToDOM({x: b.left, y: b.top}), br = net.canvasToDOM({x: b.right, y: b.bottom});
    const box = {left: canvas.left + tl.x, top: canvas.top + tl.y,
                 right: canvas.left + br.x, bottom: canvas.top + br.y};
    if (box.left < bar.right && box.right > bar.left && box.top < bar.bottom && box.bottom > bar.top)
      covered.push(id);
    labels.push(net.body.nodes[id].options.label);
  }
  const sizes = ids.map((id) => net.body.nodes[id].options.font.size * net.getScale());
  return {rules: ids.length, min_label_px: Math.min(...sizes), covered: covered,
          seeds: labels.filter((l) => l.startsWith("★"))};
}"""


server = demo_server("replay_closure", seed_demo_run)


def _trace() -> dict:
    for line in (ROOT / "fixtures/demo/traces_cdg.jsonl").read_text(encoding="utf-8").splitlines():
        trace = json.loads(line)
        if trace["id"] == CASE:
            return trace
    raise AssertionError(f"{CASE} is not in fixtures/demo/traces_cdg.jsonl")


@pytest.mark.parametrize("width", [1280, 800])
def test_replay_closure_is_legible_with_its_legend(browser, server, width):
    trace = _trace()
    skills = list(trace["closure"])
    keys = [f"closure_graph_a_{i}" for i in range(len(skills))]
    page = new_page(browser, width, 900)
    try:
        started = time.monotonic()
        goto(page, server, f"replay?dataset=demo&case={CASE}")
        until(page, "(keys) => window.__wbRuleGraphs && keys.every((k) => window.__wbRuleGraphs[k])",
              keys)
        drawn_s = time.monotonic() - started
        load = os.getloadavg()[0]
        print(f"\nReplay closure at {width} px: {len(skills)} drawings, "
              f"{sum(len(v) for v in trace['closure'].values())} rules, drawn {drawn_s:.1f} s after "
              f"the page was opened (page load included; load average {load:.1f})")
        assert_no_exception(page, server)
        main = screen(page).locator("[data-testid='stMain']")
        expect(main.get_by_text("Colour = modality", exact=False)).to_be_visible()
        expect(main.get_by_text("Edge colour = provenance", exact=False)).to_be_visible()
        # The old drawing was an iframe of its own: none is left for the closure.
        assert screen(page).locator("iframe[title*='graph_view']").count() == 0
        for key, skill in zip(keys, skills, strict=True):
            view = screen(page)
            view.evaluate("(k) => window.__wbRuleGraphs[k].body.container.scrollIntoView()", key)
            got = view.evaluate(_MEASURE, key)
            assert got["rules"] == len(trace["closure"][skill])
            assert got["min_label_px"] >= MIN_LABEL_PX, got
            assert got["covered"] == [], f"the zoom bar covers {got['covered']}"
            assert len(got["seeds"]) == len(trace["seeds"][skill]), got["seeds"]
    finally:
        page.context.close()
