"""The rule graph as a Components-v2 component on vis-network: legible at any size, and a
click selects a rule without reloading the page (issue 35 item 4).

- **Layout**: ``workbench.graph.layout.layered`` puts prerequisites below the rules needing
  them; the script wraps each layer into rows as wide as the drawing's column and draws at
  scale 1, so labels keep their size whether 5 or 250 rules are shown and the drawing grows
  downwards (the page scrolls; the mouse wheel never zooms). A 225-rule graph was a fit-to-box
  force layout of unlabelled dots.
- **Selection**: a click on a rule sends its id back (``setTriggerValue``); the page reruns
  in place (a fragment, no page load) and shows the rule beside the drawing. The old iframe
  drawing could only navigate the whole window (9 s, and the session with it).
- **Marks**: ``marked={"seeds": [...], "violated": [...]}`` draws seed rules with a thick
  dark border and a "★" before the id, violated rules with a thick orange border and a "✗";
  the selected rule with a yellow border. Replay can pass the verdict's violated rules.
- **Zoom**: buttons in a bar above the drawing (never over a label): − + fit 1:1.

Rule text reaches the browser only as data (labels on a canvas, plain-text tooltips:
vis-network 9 sets a string title with ``innerText``), never as markup. The script is
trusted code of ours; the vis-network library is read from pyvis's package (offline).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib import resources

import streamlit as st

from components.graph_view import MODALITY_COLOURS, PROVENANCE_COLOURS
from workbench.graph import SkillGraph
from workbench.graph.clusters import SECTION_MODALITY, Condensed, section_label
from workbench.graph.layout import layered

MARKS = ("seeds", "violated")
SEED_PREFIX, VIOLATED_PREFIX = "★ ", "✗ "

# The library is a component of its own, mounted once per page: its message never changes,
# so Streamlit sends it once (later runs send a reference), and a click resends only the
# drawing's data, not 470 kB of vis-network.
_LIBRARY = """
if (!globalThis.vis) { (function () {
__VIS__
}).call(globalThis); }
export default function () {}
"""

_SCRIPT = """
const PAD = 24, LAYER_GAP = 22;

function visLoaded() {  // the library component's module may load after this one
  return new Promise((resolve, reject) => {
    const started = Date.now();
    (function wait() {
      if (globalThis.vis && globalThis.vis.Network) resolve(globalThis.vis);
      else if (Date.now() - started > 20000) reject(new Error("vis-network did not load"));
      else setTimeout(wait, 20);
    })();
  });
}

function layout(data, width) {
  // Rows are packed by each box's width (n.w, else spacing_x) and as tall as their tallest
  // box (n.h, else row_height): a sectioned drawing mixes short rule ids and 3-line sections.
  const sx = data.spacing_x, sy = data.row_height, room = Math.max(1, width - 2 * PAD);
  const byLayer = new Map();
  data.nodes.forEach((n) => {
    if (!byLayer.has(n.layer)) byLayer.set(n.layer, []);
    byLayer.get(n.layer).push(n);
  });
  const layers = [...byLayer.keys()].sort((a, b) => a - b);
  let y = PAD;
  const placed = [];
  layers.forEach((layer, li) => {
    const row = byLayer.get(layer).sort((a, b) => a.order - b.order);
    let i = 0;
    while (i < row.length) {
      const chunk = [];
      let used = 0;
      while (i < row.length && (!chunk.length || used + (row[i].w || sx) <= room)) {
        used += row[i].w || sx;
        chunk.push(row[i++]);
      }
      const h = Math.max(...chunk.map((n) => n.h || sy));
      let x = (width - used) / 2;
      chunk.forEach((n) => { placed.push([n, x + (n.w || sx) / 2, y + h / 2]); x += n.w || sx; });
      y += h;
    }
    if (li < layers.length - 1) y += LAYER_GAP;
  });
  return { placed, height: Math.ceil(y + PAD) };
}

function nodeOf(n, x, y, data) {
  const fill = data.modality_colours[n.modality] || "#5b6170";
  let border = fill, width = 1;
  if (n.seed) { border = "#111111"; width = 4; }
  if (n.violated) { border = "#ff8c00"; width = 5; }
  if (n.selected) { border = "#f2c200"; width = 6; }
  return {
    id: n.id, label: n.label, title: n.title, x: x, y: y, shape: "box",
    color: { background: fill, border: border,
             highlight: { background: fill, border: "#f2c200" },
             hover: { background: fill, border: border } },
    borderWidth: n.section ? 2 : width, borderWidthSelected: 6,
    shapeProperties: { borderDashes: n.section ? [6, 3] : false },
    font: { color: "#ffffff", size: n.selected ? 16 : 14, face: "sans-serif",
            bold: { color: "#ffffff" }, multi: false },
    margin: 6,
  };
}

export default async function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const vis = await visLoaded();
  let root = parentElement.querySelector(".wb-rule-graph");
  if (!root) {
    root = document.createElement("div");
    root.className = "wb-rule-graph";
    root.setAttribute("data-testid", "wb-rule-graph");
    const bar = document.createElement("div");
    bar.className = "wb-rg-bar";
    [["−", "zoom out"], ["+", "zoom in"], ["fit", "fit the drawing into view"],
     ["1:1", "labels at their reading size"]].forEach(([text, help]) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.title = help; b.setAttribute("aria-label", help);
      b.dataset.zoom = text;
      bar.appendChild(b);
    });
    const box = document.createElement("div");
    box.className = "wb-rg-canvas";
    root.appendChild(bar);
    root.appendChild(box);
    parentElement.appendChild(root);
  }
  const box = root.querySelector(".wb-rg-canvas");
  const width = Math.max(320, Math.floor(box.clientWidth || parentElement.clientWidth || 800));
  const { placed, height } = layout(data, width);
  box.style.height = height + "px";
  root.dataset.rules = String(placed.length);
  root.dataset.selected = data.selected || "";
  const nodes = new vis.DataSet(placed.map(([n, x, y]) => nodeOf(n, x, y, data)));
  const edges = new vis.DataSet(data.edges.map((e, i) => ({
    id: i, from: e.from, to: e.to, arrows: { to: { enabled: true, scaleFactor: 0.6 } },
    dashes: e.proposed, title: e.title, width: e.width || 1.2,
    color: { color: e.colour, highlight: "#f2c200", hover: e.colour, opacity: 0.75 },
    smooth: { enabled: true, type: "cubicBezier", forceDirection: "vertical", roundness: 0.35 },
  })));
  if (root._network) root._network.destroy();
  const network = new vis.Network(box, { nodes, edges }, {
    autoResize: false, width: width + "px", height: height + "px", physics: { enabled: false },
    layout: { improvedLayout: false },
    interaction: { hover: true, zoomView: false, dragView: true, dragNodes: false,
                   navigationButtons: false, keyboard: { enabled: false }, tooltipDelay: 150 },
  });
  root._network = network;
  const home = () => network.moveTo({ position: { x: width / 2, y: height / 2 }, scale: 1 });
  home();
  if (data.selected) network.selectNodes([data.selected], true);
  root.querySelectorAll(".wb-rg-bar button").forEach((b) => {
    b.onclick = () => {
      const s = network.getScale();
      if (b.dataset.zoom === "+") network.moveTo({ scale: s * 1.25 });
      else if (b.dataset.zoom === "−") network.moveTo({ scale: s / 1.25 });
      else if (b.dataset.zoom === "fit") {
        // Into the window, not the canvas: a tall drawing's canvas is as tall as the layout.
        const h = Math.min(height, Math.max(320, window.innerHeight - 140));
        box.style.height = h + "px";
        network.setSize(width + "px", h + "px");
        network.fit({ animation: false });
      } else {
        box.style.height = height + "px";
        network.setSize(width + "px", height + "px");
        home();
      }
    };
  });
  network.on("click", (event) => {
    if (event.nodes && event.nodes.length) setTriggerValue("selected", String(event.nodes[0]));
  });
  // For tests and benchmarks: where each rule is drawn, in page coordinates.
  globalThis.__wbRuleGraphs = globalThis.__wbRuleGraphs || {};
  globalThis.__wbRuleGraphs[data.key] = network;
  return () => { network.destroy(); if (root._network === network) root._network = null; };
}
"""

_CSS = """
.wb-rule-graph { width: 100%; }
.wb-rule-graph .wb-rg-bar { display: flex; gap: 4px; justify-content: flex-end; margin-bottom: 4px; }
.wb-rule-graph .wb-rg-bar button {
  font: inherit; font-size: 0.85rem; min-width: 2.2rem; padding: 1px 8px; cursor: pointer;
  color: inherit; background: transparent; border: 1px solid rgba(128, 128, 128, 0.5);
  border-radius: 4px;
}
.wb-rule-graph .wb-rg-bar button:hover { background: rgba(128, 128, 128, 0.15); }
.wb-rule-graph .wb-rg-canvas { width: 100%; border: 1px solid rgba(128, 128, 128, 0.25);
  border-radius: 4px; position: relative; }
"""


@cache
def _components():
    lib = resources.files("pyvis") / "lib" / "vis-9.1.2"
    # Without its source-map comment: that line comment would swallow the code after it.
    vis_js = re.sub(r"^//# sourceMappingURL=.*$", "", (lib / "vis-network.min.js").read_text(
        encoding="utf-8"), flags=re.M)
    vis_css = (lib / "vis-network.css").read_text(encoding="utf-8")
    library = st.components.v2.component("workbench_vis_network",
                                         js=_LIBRARY.replace("__VIS__", vis_js),
                                         css="/* vis-network 9.1.2 */\n" + vis_css,
                                         isolate_styles=False)
    drawing = st.components.v2.component("workbench_rule_graph", js=_SCRIPT, css=_CSS,
                                         isolate_styles=False)
    return library, drawing


def graph_data(skill: SkillGraph, rule_ids: Iterable[str], *, selected: str | None = None,
               marked: Mapping[str, Iterable[str]] | None = None,
               provenances: Iterable[str] | None = None, key: str = "graph") -> dict:
    """What the script draws: nodes with their layer and marks, edges with their colour.
    ``provenances`` (None: all) filters the edges; proposed edges are dashed."""
    bad = set(marked or {}) - set(MARKS)
    if bad:
        raise ValueError(f"unknown mark(s) {', '.join(sorted(bad))}; use {', '.join(MARKS)}")
    seeds = set((marked or {}).get("seeds", ()))
    violated = set((marked or {}).get("violated", ()))
    places = layered(skill.graph, rule_ids)
    nodes = []
    for rid, place in places.items():
        rule = skill.graph.rules[rid]
        title = f"{rid} ({rule.modality})\nWhen: {rule.condition}\nThen: {rule.action}"
        if rid in violated:
            title = "Violated in this verdict\n" + title
        if rid in seeds:
            title = "Seed rule\n" + title
        prefix = (VIOLATED_PREFIX if rid in violated else "") + (SEED_PREFIX if rid in seeds else "")
        nodes.append({"id": rid, "label": prefix + rid, "title": title, "modality": rule.modality,
                      "layer": place.layer, "order": place.order, "seed": rid in seeds,
                      "violated": rid in violated, "selected": rid == selected})
    allowed = None if provenances is None else set(provenances)
    edges = []
    for e, proposed in [*((e, False) for e in skill.graph.edges), *((e, True) for e in skill.proposed)]:
        if e.source in places and e.target in places and (allowed is None or e.provenance in allowed):
            trust = (e.provenance or "unknown") + ("" if e.confidence is None else f" {e.confidence:.2f}")
            edges.append({"from": e.source, "to": e.target, "proposed": proposed,
                          "colour": PROVENANCE_COLOURS.get(e.provenance, "#bbbbbb"),
                          "title": f"{e.source} requires {e.target}\n"
                                   + ("proposed: " if proposed else "") + trust
                                   + (f"\n{e.note}" if e.note else "")})
    longest = max((len(n["label"]) for n in nodes), default=4)
    return {"key": key, "nodes": nodes, "edges": edges, "selected": selected or "",
            "modality_colours": MODALITY_COLOURS,
            # A box fits its label (about 7.6 px a character at 14 px, 12 px of margins) and
            # a gap of about 20 px.
            "spacing_x": max(72, int(longest * 7.6) + 32), "row_height": 50}


def rule_graph(skill: SkillGraph, rule_ids: Iterable[str], *, key: str,
               selected: str | None = None, marked: Mapping[str, Iterable[str]] | None = None,
               provenances: Iterable[str] | None = None,
               on_select: Callable[[], None] | None = None,
               condensed: Condensed | None = None) -> str | None:
    """Draw the graph of ``rule_ids`` (or, given ``condensed``, its sections and open rules);
    returns the rule (or section node) clicked in this run, if any. ``on_select`` runs
    before the rerun a click causes (read the id with :func:`clicked` there)."""
    library, drawing = _components()
    library(key=f"{key}_library")
    data = (condensed_data(skill, condensed, selected=selected, key=key) if condensed is not None
            else graph_data(skill, rule_ids, selected=selected, marked=marked,
                            provenances=provenances, key=key))
    result = drawing(key=key, data=data, on_selected_change=on_select or (lambda: None))
    return getattr(result, "selected", None)


def _box(label: str) -> dict[str, int]:
    """A box's room in the drawing: about 7.6 px a character at 14 px plus margins and a gap;
    18 px a line plus margins and a gap."""
    lines = label.split("\n")
    return {"w": int(max(len(line) for line in lines) * 7.6) + 32, "h": 18 * len(lines) + 32}


def condensed_data(skill: SkillGraph, condensed: Condensed, *, selected: str | None = None,
                   key: str = "graph") -> dict:
    """What the script draws for a sectioned graph: a closed section is one dashed node
    (click opens it), an edge between sections is as wide as the rule edges it merges."""
    by_pair = {e.pair: e for e in skill.graph.edges}
    places = layered(condensed.graph, list(condensed.graph.rules))
    nodes = []
    for nid, place in places.items():
        if condensed.is_section(nid):
            count = len(condensed.members[nid])
            label = section_label(condensed.titles[nid], count)
            nodes.append({"id": nid, "label": label, "section": True, **_box(label),
                          "title": f"{condensed.titles[nid]}\n{count} rules: click to open",
                          "modality": SECTION_MODALITY, "layer": place.layer,
                          "order": place.order, "selected": False})
            continue
        rule = skill.graph.rules[nid]
        nodes.append({"id": nid, "label": nid, "modality": rule.modality, **_box(nid),
                      "title": f"{nid} ({rule.modality})\nWhen: {rule.condition}\nThen: {rule.action}",
                      "layer": place.layer, "order": place.order, "selected": nid == selected})
    edges = []
    for (src, tgt), count in condensed.weights.items():
        rule_edge = by_pair.get((src, tgt))
        colour = (PROVENANCE_COLOURS.get(rule_edge.provenance, "#bbbbbb") if rule_edge
                  else "#8a8f99")
        title = (f"{src} requires {tgt}" if rule_edge else
                 f"{count} require edge{'s' if count != 1 else ''} from {src} to {tgt}")
        edges.append({"from": src, "to": tgt, "proposed": False, "colour": colour,
                      "title": title, "width": min(6.0, 1.2 + 0.6 * (count - 1))})
    longest = max((len(line) for n in nodes for line in n["label"].split("\n")), default=4)
    tall = any(n.get("section") for n in nodes)  # a section's label is three lines
    return {"key": key, "nodes": nodes, "edges": edges, "selected": selected or "",
            "modality_colours": MODALITY_COLOURS, "spacing_x": max(72, int(longest * 7.6) + 32),
            "row_height": 86 if tall else 50}


def clicked(key: str) -> str | None:
    """In an ``on_select`` callback: the rule the click chose."""
    state = st.session_state.get(key)
    value = state.get("selected") if isinstance(state, Mapping) else getattr(state, "selected", None)
    return str(value) if value else None


def legend() -> None:
    st.caption("Colour = modality: blue required · red prohibited · green permitted. "
               "★ and a thick dark border = seed rules; ✗ and a thick orange border = violated "
               "rules; yellow border = the rule shown beside. Arrows point from a rule down to "
               "its prerequisite; rules linked to nothing shown are in the last rows. Click a "
               "rule to open it; the wheel scrolls the page; zoom with the buttons above.")


def closure_legend() -> None:
    """The legend of a closure drawn on Replay: the Graph page's colours and marks, with what a
    click does there (it selects the rule and offers its link to the Graph page)."""
    st.caption("Colour = modality: blue required · red prohibited · green permitted. "
               "★ and a thick dark border = seed rules; ✗ and a thick orange border = rules "
               "this verdict cites as violated. Arrows point from a rule down to its "
               "prerequisite. Click a rule to get its link to the Graph page; the wheel scrolls "
               "the page; zoom with the buttons above the drawing.")
