"""The graph drawing (issue #16, items 5 and 8): the wheel scrolls the page, small closures
are drawn layered (readable), the canvas is transparent for the dark theme."""

from __future__ import annotations

import json

from components.graph_view import LAYERED_UP_TO, graph_html, graph_options
from workbench.graph import PolicyIndex


def test_wheel_never_zooms_and_small_graphs_are_layered():
    small, large = json.loads(graph_options(30)), json.loads(graph_options(LAYERED_UP_TO + 1))
    for options in (small, large):
        assert options["interaction"]["zoomView"] is False
        assert options["interaction"]["navigationButtons"] is True  # zoom is still possible
    assert small["layout"]["hierarchical"]["enabled"] is True
    assert small["physics"]["enabled"] is False
    assert "layout" not in large  # a force layout for big graphs


def test_graph_page_is_theme_neutral_and_offline(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data).skills["refunds"]
    page = graph_html(skill, list(skill.graph.rules), seeds=["R1"], selected="R1")
    assert '"zoomView": false' in page
    assert '<meta name="color-scheme" content="light dark">' in page
    assert "background-color: transparent" in page
    assert 'src="http' not in page and 'href="http' not in page  # nothing loaded off the machine
