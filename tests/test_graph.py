from __future__ import annotations

import copy
import json
import random

import networkx as nx
import pytest

from workbench.graph import (
    Edge,
    IndexValidationError,
    PolicyIndex,
    Rule,
    RuleGraph,
    UnknownRule,
)
from workbench.graph.closure import (
    BudgetExceeded,
    ClosureContext,
    EmptySeed,
    explain_path,
    select_closure,
)


def test_round_trip_is_lossless(refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    again = json.loads(index.dumps())
    assert again == refund_index_data
    assert PolicyIndex.loads(index.dumps()).to_dict() == refund_index_data


def test_span_text_is_verbatim(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    assert skill.rule_text("R4") == "Never refund to a different payment method."


def test_every_problem_is_reported_with_its_location(refund_index_data):
    data = copy.deepcopy(refund_index_data)
    data["format"] = "skillcdg/0"
    skill = data["skills"][0]
    skill["rules"][1]["id"] = "R1"  # duplicate
    skill["rules"][2]["modality"] = "must"
    skill["rules"][3]["spans"] = [{"start": 5, "end": 5}, {"start": 0, "end": 10**6}]
    skill["edges"].append({"source": "R3", "target": "R9", "type": "require"})
    with pytest.raises(IndexValidationError) as info:
        PolicyIndex.from_dict(data, "demo.json")
    found = {p.location: p.message for p in info.value.problems}
    assert "unknown format" in found["format"]
    assert "duplicate rule id 'R1'" in found["skills[0].rules[1].id"]
    assert "'must' is not one of" in found["skills[0].rules[2].modality"]
    assert "empty span" in found["skills[0].rules[3].spans[0]"]
    assert "outside the source" in found["skills[0].rules[3].spans[1]"]
    assert "no rule 'R9'" in found["skills[0].edges[3].target"]
    # renaming R2 to R1 also orphans the two edges that pointed at R2
    assert "no rule 'R2'" in found["skills[0].edges[0].target"]
    assert str(info.value).startswith("demo.json: 8 problem(s)")


def test_missing_fields_and_wrong_types(refund_index_data):
    data = copy.deepcopy(refund_index_data)
    del data["skills"][0]["rules"][0]["condition"]
    data["skills"][0]["rules"][1]["action"] = 3
    data["skills"].append(copy.deepcopy(data["skills"][0]))
    with pytest.raises(IndexValidationError) as info:
        PolicyIndex.from_dict(data)
    locs = [p.location for p in info.value.problems]
    assert "skills[0].rules[0].condition" in locs
    assert "skills[0].rules[1].action" in locs
    with pytest.raises(IndexValidationError, match="not valid JSON"):
        PolicyIndex.loads("{not json")
    with pytest.raises(IndexValidationError, match="must be a JSON object"):
        PolicyIndex.from_dict([])


def test_duplicate_skill_names_are_an_error(refund_index_data):
    data = copy.deepcopy(refund_index_data)
    data["skills"].append(copy.deepcopy(data["skills"][0]))
    with pytest.raises(IndexValidationError, match="duplicate SKILL name 'refunds'"):
        PolicyIndex.from_dict(data)


def test_self_loops_and_duplicate_edges_are_dropped_with_warnings(refund_index_data):
    data = copy.deepcopy(refund_index_data)
    data["skills"][0]["edges"] += [
        {"source": "R1", "target": "R1", "type": "require"},
        {"source": "R3", "target": "R2", "type": "require"},
    ]
    index = PolicyIndex.from_dict(data)
    assert len(index["refunds"].graph.edges) == 3
    assert any("self-loop" in w for w in index.warnings)
    assert any("duplicate edge" in w for w in index.warnings)


def test_rule_ids_shared_across_skills_are_warned_about(refund_index_data):
    data = copy.deepcopy(refund_index_data)
    assert PolicyIndex.from_dict(data).warnings == []
    twin = copy.deepcopy(data["skills"][0])
    twin["name"] = "refunds-eu"
    data["skills"].append(twin)
    warnings = PolicyIndex.from_dict(data).warnings
    assert len(warnings) == 1
    assert "'R1' (refunds, refunds-eu)" in warnings[0] and "id prefix" in warnings[0]


def test_closure_follows_requires_transitively(refund_index_data):
    graph = PolicyIndex.from_dict(refund_index_data)["refunds"].graph
    assert graph.closure(["R3"]) == ["R3", "R2", "R4", "R1"]
    assert graph.closure(["R1"]) == ["R1"]
    assert graph.dependants(["R1"]) == ["R1", "R2", "R3"]
    with pytest.raises(UnknownRule, match="R9"):
        graph.closure(["R1", "R9"])


def test_closure_terminates_on_cycles():
    rules = [Rule(f"r{i}", "c", "a", "required") for i in range(4)]
    g = RuleGraph(rules, [Edge("r0", "r1"), Edge("r1", "r2"), Edge("r2", "r0"), Edge("r2", "r3")])
    assert sorted(g.closure(["r1"])) == ["r0", "r1", "r2", "r3"]
    assert g.closure(["r3"]) == ["r3"]


@pytest.mark.parametrize("seed", range(25))
def test_closure_matches_networkx_descendants_on_random_graphs(seed):
    rnd = random.Random(seed)
    n = rnd.randint(1, 80)
    m = rnd.randint(0, 3 * n)
    ids = [f"n{i}" for i in range(n)]
    pairs = {(rnd.choice(ids), rnd.choice(ids)) for _ in range(m)}
    g = RuleGraph([Rule(i, "c", "a", "required") for i in ids], [Edge(a, b) for a, b in pairs])
    ref = nx.DiGraph()
    ref.add_nodes_from(ids)
    ref.add_edges_from((a, b) for a, b in pairs if a != b)
    seeds = rnd.sample(ids, rnd.randint(1, min(5, n)))
    expected = set(seeds).union(*(nx.descendants(ref, s) for s in seeds))
    got = g.closure(seeds)
    assert set(got) == expected
    assert len(got) == len(set(got))
    assert got[: len(seeds)] == list(dict.fromkeys(seeds))


def test_closure_paths_say_why_each_rule_is_in(refund_index_data):
    # refunds: R3 requires R2 and R4, R2 requires R1.
    graph = PolicyIndex.from_dict(refund_index_data)["refunds"].graph
    assert graph.closure_paths(["R3"]) == {
        "R3": ["R3"], "R2": ["R3", "R2"], "R4": ["R3", "R4"], "R1": ["R3", "R2", "R1"]}
    # Two seeds: R1 is reached from the nearer one (R2), not through R3 -> R2 -> R1.
    assert graph.closure_paths(["R3", "R2"]) == {
        "R3": ["R3"], "R2": ["R2"], "R4": ["R3", "R4"], "R1": ["R2", "R1"]}
    assert list(graph.closure_paths(iter(["R3"]))) == graph.closure(["R3"])  # same order
    with pytest.raises(UnknownRule, match="R9"):
        graph.closure_paths(iter(["R1", "R9"]))  # (a generator, read twice for the message)
    assert explain_path(["R3", "R2", "R1"]) == "seed R3 → R2 → R1"
    assert explain_path(["R3"]) == "seed R3"


@pytest.mark.parametrize("seed", range(25))
def test_closure_paths_are_shortest_require_paths_on_random_graphs(seed):
    rnd = random.Random(seed)
    n = rnd.randint(1, 80)
    ids = [f"n{i}" for i in range(n)]
    pairs = sorted({(rnd.choice(ids), rnd.choice(ids)) for _ in range(rnd.randint(0, 3 * n))})
    g = RuleGraph([Rule(i, "c", "a", "required") for i in ids], [Edge(a, b) for a, b in pairs])
    ref = nx.DiGraph()
    ref.add_nodes_from(ids)
    ref.add_edges_from((a, b) for a, b in pairs if a != b)
    seeds = rnd.sample(ids, rnd.randint(1, min(5, n)))
    paths = g.closure_paths(seeds)
    assert list(paths) == g.closure(seeds)
    edges = set(ref.edges)
    for rid, path in paths.items():
        assert path[0] in seeds and path[-1] == rid
        assert all((a, b) in edges for a, b in zip(path, path[1:], strict=False))
        nearest = min(nx.shortest_path_length(ref, s, rid) for s in seeds if nx.has_path(ref, s, rid))
        assert len(path) - 1 == nearest
    assert g.closure_paths(seeds) == paths  # deterministic


def test_select_closure_outcomes(refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    ctx = select_closure(index, {"refunds": ["R3"]})
    assert isinstance(ctx, ClosureContext)
    assert ctx.rules == {"refunds": ["R3", "R2", "R4", "R1"]}
    assert "[R4] (prohibited)" in ctx.text
    assert '"Never refund to a different payment method."' in ctx.text
    assert ctx.tokens > 20
    empty = select_closure(index, {"refunds": []})
    assert isinstance(empty, EmptySeed) and empty.skills == ["refunds"]
    over = select_closure(index, {"refunds": ["R3"]}, budget=ctx.tokens - 1)
    assert isinstance(over, BudgetExceeded)
    assert over.tokens == ctx.tokens and "no truncation" in over.message
    assert ctx.paths == over.paths == {"refunds": {
        "R3": ["R3"], "R2": ["R3", "R2"], "R4": ["R3", "R4"], "R1": ["R3", "R2", "R1"]}}
    assert isinstance(select_closure(index, {"refunds": ["R3"]}, budget=ctx.tokens), ClosureContext)
    with pytest.raises(KeyError, match="no SKILL named 'nope'"):
        select_closure(index, {"nope": ["R1"]})
    with pytest.raises(UnknownRule, match="in SKILL 'refunds'"):
        select_closure(index, {"refunds": ["R7"]})


def test_save_is_atomic_and_load_names_missing_file(tmp_path, refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    path = tmp_path / "i.json"
    index.save(path)
    assert PolicyIndex.load(path).to_dict() == refund_index_data
    assert not (tmp_path / "i.json.tmp").exists()
    with pytest.raises(FileNotFoundError, match="workbench extract"):
        PolicyIndex.load(tmp_path / "missing.json")


def test_constructors_refuse_a_repeated_rule_id_or_skill_name(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    rule = next(iter(skill.graph.rules.values()))
    with pytest.raises(ValueError, match=f"duplicate rule id '{rule.id}'"):
        RuleGraph([rule, rule])
    with pytest.raises(ValueError, match="duplicate SKILL name 'refunds'"):
        PolicyIndex([skill, skill])
