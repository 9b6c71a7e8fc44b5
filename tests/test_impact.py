from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.audit import load_cases
from workbench.audit.impact import Flip, closure_changes, with_skill
from workbench.graph import Edge, PolicyIndex, RuleGraph, SkillGraph

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


def test_removing_an_edge_changes_only_cases_that_reached_through_it():
    from workbench.audit import AuditIndex, AuditOptions, audit_case

    index = PolicyIndex.load(DEMO / "index.json")
    cases = [c for c in load_cases(DEMO / "cases.jsonl") if c.id.startswith("mor-")]
    skill = index["merchant-order-refund"]
    trace = audit_case(cases[0], AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    seeds = set(trace.seeds[skill.name])
    closure = trace.closure[skill.name]
    # An edge inside this closure whose target has no other way in: removing it must shrink
    # the closure of cases[0] by that target (at least).
    cut = next(e for e in skill.graph.edges
               if e.source in closure and e.target in closure and e.target not in seeds
               and len(skill.graph.required_by(e.target)) == 1)
    edges = [e for e in skill.graph.edges if e != cut]
    edited = SkillGraph(skill.name, skill.description, skill.source,
                        RuleGraph(skill.graph.rules.values(), edges))
    changes = closure_changes(cases, index, with_skill(index, edited), skill.name)
    by_case = {c.case_id: c for c in changes}
    assert cut.target in by_case[cases[0].id].removed
    for ch in changes:
        assert not ch.added and ch.removed
        assert set(ch.after) < set(ch.before)
    # No edit, no change.
    assert closure_changes(cases, index, index, skill.name) == []


def test_adding_an_edge_adds_its_target_closure():
    index = PolicyIndex.load(DEMO / "index.json")
    cases = [c for c in load_cases(DEMO / "cases.jsonl") if c.id.startswith("mor-002")]
    skill = index["merchant-order-refund"]
    base = closure_changes(cases, index, index, skill.name)
    assert base == []
    target = next(r for r in skill.graph.rules if r.startswith("MOR-F"))
    seeds_closure = None
    from workbench.audit import AuditIndex, AuditOptions, audit_case
    trace = audit_case(cases[0], AuditIndex(index), "cdg", None, AuditOptions(judge_mode="none"))
    seeds_closure = trace.closure[skill.name]
    if target in seeds_closure:
        target = next(r for r in skill.graph.rules if r not in seeds_closure)
    edited = SkillGraph(skill.name, skill.description, skill.source,
                        RuleGraph(skill.graph.rules.values(),
                                  [*skill.graph.edges, Edge(seeds_closure[0], target)]))
    changes = closure_changes(cases, index, with_skill(index, edited), skill.name)
    assert len(changes) == 1 and target in changes[0].added


def test_flip_needs_both_verdicts():
    assert Flip("a", True, False, {}).flipped
    assert not Flip("a", True, True, {}).flipped
    assert not Flip("a", None, True, {}).flipped
    assert dataclasses.is_dataclass(Flip)
