from __future__ import annotations

from workbench.graph import PolicyIndex
from workbench.graph.editing import apply_edits


def _tables(skill):
    rules = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
             for r in skill.graph.rules.values()]
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
    return rules, edges


def test_unchanged_tables_give_equal_graph(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    res = apply_edits(skill, *_tables(skill))
    assert res.ok and res.summary == "no changes"
    assert PolicyIndex([res.skill]).to_dict() == refund_index_data


def test_edit_add_delete_and_edges(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    rules, edges = _tables(skill)
    rules[0]["action"] = "verify identity with email and order number"
    rules = [r for r in rules if r["id"] != "R4"]
    rules.append({"id": "R5", "condition": "refund issued", "action": "send receipt",
                  "modality": "required"})
    rules.append({"id": None, "condition": float("nan"), "action": None, "modality": None})
    edges = [e for e in edges if e["target"] != "R4"] + [{"source": "R5", "target": "R3"}]
    res = apply_edits(skill, rules, edges)
    assert res.ok, res.problems
    g = res.skill.graph
    assert list(g.rules) == ["R1", "R2", "R3", "R5"]
    assert g.rules["R1"].spans == skill.graph.rules["R1"].spans  # spans kept on edit
    assert g.rules["R5"].spans == ()
    assert g.closure(["R5"]) == ["R5", "R3", "R2", "R1"]
    assert res.summary == ("added rules R5; removed rules R4; edited rules R1; "
                           "added edges R5->R3; removed edges R3->R4")


def test_every_problem_is_reported(refund_index_data):
    skill = PolicyIndex.from_dict(refund_index_data)["refunds"]
    rules, edges = _tables(skill)
    rules[1]["modality"] = "must"
    rules[2]["id"] = "R1"
    rules.append({"id": "", "condition": "c", "action": "a", "modality": "required"})
    rules.append({"id": "R9", "condition": "", "action": "a", "modality": "required"})
    edges.append({"source": "R1", "target": "R1"})
    edges.append({"source": "R2", "target": "R1"})
    edges.append({"source": "R2", "target": "ghost"})
    res = apply_edits(skill, rules, edges)
    assert not res.ok and res.skill is None
    text = "\n".join(str(p) for p in res.problems)
    assert "modality 'must' is not one of" in text
    assert "duplicate rule id 'R1'" in text
    assert "needs an id" in text
    assert "needs both a condition and an action" in text
    assert "cannot require itself" in text
    assert "duplicate edge 'R2' -> 'R1'" in text
    assert "target 'ghost' is not a rule" in text
