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


def test_node_click_opens_the_rule_on_the_graph_page(refund_index_data):
    """Issue #16 item 5: a click on a node navigates the app to /graph?skill=&rule=."""
    skill = PolicyIndex.from_dict(refund_index_data).skills["refunds"]
    page = graph_html(skill, list(skill.graph.rules), version=3)
    handler = page.index('network.on("click"')
    assert handler > page.index("drawGraph();")  # bound after pyvis created the network
    assert page.index("</body>") > handler
    assert 'var skill = "refunds", version = 3;' in page
    assert 'params.set("rule", String(ruleId))' in page  # percent-encoded by URLSearchParams
    assert '"graph?" + params.toString()' in page  # relative: works under a base path too
    latest = graph_html(skill, list(skill.graph.rules))
    assert "version = null;" in latest  # no pinned version: the link opens the latest


def test_hostile_skill_name_stays_a_string_in_the_click_script():
    from components.graph_view import with_node_links

    hostile = '</script><img src=x onerror=alert(1)>"; alert(2); //&'
    page = with_node_links("<html><body><script>drawGraph();</script></body></html>", hostile)
    assert "</script><img" not in page
    assert "<img" not in page and "alert(2); //&" not in page
    literal = page.split("var skill = ", 1)[1].split(", version = ", 1)[0]
    assert json.loads(literal) == hostile  # the exact name, as one JSON/JS string literal
    assert page.count("</script>") == 2  # pyvis's own and ours: nothing closed early
