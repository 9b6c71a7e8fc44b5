"""Draw a (focused) rule graph with pyvis, fully offline (vis-network inlined).

Rule text reaches the browser only as node labels (drawn on a canvas) and as plain-text
tooltips inside JSON, so policy text cannot inject markup into the page
(tests/e2e/test_injection.py hovers a hostile tooltip to check).

Clicking a node opens that rule on the Graph page (``/graph?skill=&rule=``): the drawing lives
in a sandboxed iframe that cannot talk back to Streamlit, so it navigates the app's window.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

import streamlit as st
from pyvis.network import Network

from workbench.graph import SkillGraph

# pyvis's template always links Bootstrap from a CDN, even with inlined vis-network; the graph
# does not use it, and the workbench must make no request off the machine.
_REMOTE_TAGS = re.compile(
    r"<link\b[^>]*href=\"https?://[^>]*>|<script\b[^>]*src=\"https?://[^>]*>\s*</script>", re.S
)

MODALITY_COLOURS = {"required": "#2f6fde", "prohibited": "#d9363e", "permitted": "#2e9e5b"}
SEED_BORDER = "#111111"
VIOLATED_BORDER = "#ff8c00"  # orange: apart from the modality fills (blue, red, green)
# Edge colour = where the edge came from, so an author sees at a glance which to check.
PROVENANCE_COLOURS = {
    "model": "#999999", "definition": "#8e44ad", "cross-reference": "#d35400",
    "procedure": "#16a085", "heading": "#2c3e50", "continuation": "#b7950b", "author": "#111111",
    "": "#bbbbbb",
}


def graph_html(
    skill: SkillGraph,
    rule_ids: Iterable[str],
    seeds: Iterable[str] = (),
    selected: str | None = None,
    height_px: int = 560,
    provenances: Iterable[str] | None = None,
    version: int | None = None,
    marked: Mapping[str, Iterable[str]] | None = None,
) -> str:
    """The page holding the drawing; ``provenances`` (None: all) filters the edges drawn, and
    the SKILL's proposed edges among them are drawn dashed. A node click opens the rule on the
    Graph page, at ``version`` when given (else the latest). ``marked`` (as
    ``components.rule_graph``): ``{"seeds": [...], "violated": [...]}``; seeds are boxed, a
    violated rule gets a thick orange border and a "✗" before its id."""
    unknown = set(marked or {}) - {"seeds", "violated"}
    if unknown:
        raise ValueError(f"unknown mark(s) {', '.join(sorted(unknown))}; use seeds, violated")
    allowed = None if provenances is None else set(provenances)
    ids = [r for r in rule_ids if r in skill.graph.rules]
    keep = set(ids)
    seed_set = set(seeds) | set((marked or {}).get("seeds", ()))
    violated = set((marked or {}).get("violated", ()))
    # Transparent canvas: the graph sits on whichever theme (light or dark) the page uses.
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor="transparent")
    for rid in ids:
        rule = skill.graph.rules[rid]
        colour = MODALITY_COLOURS.get(rule.modality, "#888888")
        # vis-network 9 shows a string title as plain text, and pyvis writes node data with
        # Jinja's tojson (which escapes '<'), so the raw text is both safe and readable here.
        tooltip = f"{rid} ({rule.modality})\nWhen: {rule.condition}\nThen: {rule.action}"
        if rule.provenance == "obligation":  # the model called it no rule: an author should look
            tooltip += "\nKept by its wording (the model did not call it a rule)"
        border = VIOLATED_BORDER if rid in violated else SEED_BORDER if rid in seed_set else colour
        node = {
            "label": ("✗ " if rid in violated else "") + rid,
            "title": ("Violated in this verdict\n" if rid in violated else "") + tooltip,
            "color": {"background": colour, "border": border},
            "borderWidth": 5 if rid in violated else 4 if rid in seed_set else 1,
            "shape": "box" if rid in seed_set else "dot",
            "size": 18 if rid == selected else 12,
            # Dot labels are drawn beside the node on the page background: a light outline
            # keeps dark text readable on a dark theme too.
            "font": {"color": "#111111", "strokeWidth": 3, "strokeColor": "#ffffff"}
            if rid not in seed_set else {"color": "#ffffff"},
        }
        net.add_node(rid, **node)
    for e, dashed in [*((e, False) for e in skill.graph.edges), *((e, True) for e in skill.proposed)]:
        if e.source in keep and e.target in keep and (allowed is None or e.provenance in allowed):
            label = f"{e.provenance or 'unknown'}" + ("" if e.confidence is None else f" {e.confidence:.2f}")
            net.add_edge(e.source, e.target, arrows="to", dashes=dashed,
                         color=PROVENANCE_COLOURS.get(e.provenance, "#bbbbbb"),
                         title=("proposed: " if dashed else "") + label + (f"\n{e.note}" if e.note else ""))
    net.set_options(graph_options(len(ids)))
    page = _REMOTE_TAGS.sub("", net.generate_html(notebook=False))
    # Let the iframe show the page's theme through: a document that declares no colour
    # scheme gets an opaque white canvas inside a dark page.
    page = page.replace("<head>", "<head>" + _THEME_NEUTRAL, 1)
    return with_node_links(page, skill.name, version)


_THEME_NEUTRAL = ('<meta name="color-scheme" content="light dark">'
                  "<style>html,body{background:transparent}</style>")


# Up to this many rules a layered drawing (prerequisites below the rules needing them) stays
# readable; the 25-39-rule closures on Replay were unreadable at force-layout fit zoom.
LAYERED_UP_TO = 60


def graph_options(n_rules: int) -> str:
    """vis-network options. The mouse wheel scrolls the page, not the graph (it trapped the
    page's scrolling); zoom with the navigation buttons or by dragging."""
    interaction = {"hover": True, "navigationButtons": True, "zoomView": False,
                   "keyboard": {"enabled": False}}
    if n_rules <= LAYERED_UP_TO:
        options = {"layout": {"hierarchical": {
                       "enabled": True, "direction": "UD", "sortMethod": "directed",
                       "levelSeparation": 90, "nodeSpacing": 130}},
                   "physics": {"enabled": False}, "interaction": interaction}
    else:
        options = {"physics": {"stabilization": {"iterations": 150},
                               "barnesHut": {"springLength": 120}},
                   "interaction": interaction}
    return json.dumps(options)


def _script_json(value: object) -> str:
    """``value`` as a JavaScript literal that cannot end the ``<script>`` it sits in: JSON
    quotes and escapes it, and ``<``/``>``/``&`` become unicode escapes (a SKILL named
    ``</script><img onerror=…>`` stays a string)."""
    return (json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# Streamlit's iframe sandbox has allow-same-origin and allow-scripts but not
# allow-top-navigation, so assigning window.top.location is refused. A link created in the
# app's own document and clicked there is a navigation of that document, which is allowed.
# The URL is relative to the app's address, so it also works under a server base path; the
# rule id reaches it through URLSearchParams (percent-encoded), never through markup.
_NODE_LINK_SCRIPT = """<script type="text/javascript">
(function () {{
  var skill = {skill}, version = {version};
  function openRule(ruleId) {{
    var params = new URLSearchParams();
    params.set("skill", skill);
    if (version !== null) {{ params.set("version", String(version)); }}
    params.set("rule", String(ruleId));
    var app = window.top;
    var url;
    try {{ url = new URL("graph?" + params.toString(), app.location.href).href; }}
    catch (e) {{ url = "graph?" + params.toString(); app = window; }}
    try {{
      var a = app.document.createElement("a");
      a.href = url;
      a.target = "_self";
      app.document.body.appendChild(a);
      a.click();
      a.remove();
    }} catch (e) {{
      window.open(url, "_blank");  /* not same-origin: a new tab is the most we may do */
    }}
  }}
  if (typeof network !== "undefined" && network) {{
    network.on("click", function (event) {{
      if (event.nodes && event.nodes.length) {{ openRule(event.nodes[0]); }}
    }});
  }}
}})();
</script>"""


def with_node_links(page: str, skill_name: str, version: int | None = None) -> str:
    """Add the node-click handler after pyvis has drawn ``network`` (its script ends the body)."""
    script = _NODE_LINK_SCRIPT.format(skill=_script_json(skill_name),
                                      version=_script_json(version))
    head, sep, tail = page.rpartition("</body>")
    return head + script + sep + tail if sep else page + script


def show_graph(skill: SkillGraph, rule_ids: Iterable[str], seeds: Iterable[str] = (),
               selected: str | None = None, height_px: int = 560,
               provenances: Iterable[str] | None = None, version: int | None = None,
               marked: Mapping[str, Iterable[str]] | None = None) -> None:
    """The drawing in an iframe (a click opens the rule on the Graph page). For a drawing
    legible at any size whose clicks stay on the page, use ``components.rule_graph``."""
    st.iframe(graph_html(skill, rule_ids, seeds, selected, height_px, provenances, version,
                         marked), height=height_px + 30)


def legend(seeds_are: str = "seed rules (where the audit starts)") -> None:
    """What the drawing's shapes mean; ``seeds_are`` names what the boxes are on this page."""
    st.caption(f"Colour = modality: blue required · red prohibited · green permitted. "
               f"Boxes (dark border, white text) = {seeds_are}; dots = rules reached through "
               "require edges. Arrows point from a rule to its prerequisite. Scroll the page "
               "with the wheel; zoom with the buttons in the corner; click a rule to open it.")


def provenance_legend() -> None:
    # Every colour an edge can take, "unknown" included: an imported graph's edges have no
    # provenance (the demo's 235), and the filter above listed "unknown (235)" that the legend
    # did not explain (issue 56).
    st.caption("Edge colour = provenance: grey model · purple definition · orange cross-reference · "
               "teal procedure · navy heading · ochre continuation · black author · light grey "
               "unknown (no provenance recorded, e.g. imported); dashed = proposed, not yet used "
               "by the closure.")
