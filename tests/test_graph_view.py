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


def test_marked_violated_and_seed_rules_are_drawn_apart(refund_index_data):
    """Issue 35 item 4: the violated rule was not marked in Replay's closure graph."""
    import pytest

    from components.graph_view import VIOLATED_BORDER
    from components.rule_graph import graph_data

    skill = PolicyIndex.from_dict(refund_index_data).skills["refunds"]
    page = graph_html(skill, list(skill.graph.rules), marked={"seeds": ["R3"], "violated": ["R1"]})
    nodes = {n["id"]: n for n in json.loads(page.split("nodes = new vis.DataSet(", 1)[1]
                                            .split(");", 1)[0])}
    assert nodes["R1"]["label"] == "✗ R1" and nodes["R1"]["color"]["border"] == VIOLATED_BORDER
    assert nodes["R3"]["shape"] == "box" and nodes["R3"]["label"] == "R3"
    assert nodes["R2"]["shape"] == "dot" and nodes["R2"]["borderWidth"] == 1
    data = graph_data(skill, list(skill.graph.rules), marked={"seeds": ["R3"], "violated": ["R1"]})
    drawn = {n["id"]: n for n in data["nodes"]}
    assert (drawn["R1"]["violated"], drawn["R1"]["label"]) == (True, "✗ R1")
    assert (drawn["R3"]["seed"], drawn["R3"]["label"]) == (True, "★ R3")
    assert not (drawn["R2"]["seed"] or drawn["R2"]["violated"])
    with pytest.raises(ValueError, match="unknown mark"):
        graph_data(skill, ["R1"], marked={"broken": ["R1"]})


def test_the_layered_layout_puts_prerequisites_below_and_loners_last(refund_index_data):
    from workbench.graph.layout import layered

    skill = PolicyIndex.from_dict(refund_index_data).skills["refunds"]
    places = layered(skill.graph, list(skill.graph.rules))
    for e in skill.graph.edges:  # every arrow points down
        assert places[e.source].layer < places[e.target].layer, e
    lonely = layered(skill.graph, ["R1", "R4"])  # no edge between the two drawn
    assert {p.linked for p in lonely.values()} == {False}


def test_the_layered_layout_survives_a_cycle():
    from workbench.graph import Edge, Rule, RuleGraph
    from workbench.graph.layout import layered

    rules = [Rule(r, "c", "a", "required") for r in "ABC"]
    graph = RuleGraph(rules, [Edge("A", "B"), Edge("B", "C"), Edge("C", "A")])
    places = layered(graph, "ABC")
    assert sorted(p.layer for p in places.values()) == [0, 1, 2]  # one back edge ignored
    assert all(p.linked for p in places.values())
