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


# -- what an edit does to the audited cases (issue 56 item 2) --------------------------------

MOR = "merchant-order-refund"
# MOR-S009 ("treat it as possibly lost") is in the closure of these five stored cdg traces of
# the demo (fixtures/demo/traces_cdg.jsonl), and of no other demo case.
HOLD_S009 = ["mor-001-delay-not-yet-late", "mor-002-delay-cancel-coupon-share",
             "mor-003-delay-premier-credit", "mor-008-lost-parcel-trace",
             "mor-009-refund-without-return-limit"]


def _demo_traces():
    from workbench.audit.trace_file import read_traces

    traces, problems = read_traces(DEMO / "traces_cdg.jsonl")
    assert not problems
    return {t.id: t for t in traces}


def _edited(skill: SkillGraph, rule_id: str, **fields) -> SkillGraph:
    rules = [dataclasses.replace(r, **fields) if r.id == rule_id else r
             for r in skill.graph.rules.values()]
    return SkillGraph(skill.name, skill.description, skill.source,
                      RuleGraph(rules, skill.graph.edges))


def test_reversing_a_rules_action_lists_the_cases_whose_closure_holds_it():
    """A text edit changes no closure, so closure_changes finds nothing; the cases whose
    audited closure holds the rule are what the edit reaches."""
    from workbench.audit.impact import affected_cases, edited_rules

    index = PolicyIndex.load(DEMO / "index.json")
    cases = load_cases(DEMO / "cases.jsonl")
    draft = _edited(index[MOR], "MOR-S009", action="NEVER treat it as possibly lost")
    after = with_skill(index, draft)
    assert edited_rules(index[MOR], draft) == {"MOR-S009": ["action changed"]}
    assert closure_changes(cases, index, after, MOR) == []  # what the page used to say

    stored = _demo_traces()
    found = affected_cases(cases, MOR, index, after, audited=stored)
    assert [a.case_id for a in found] == HOLD_S009
    assert all(a.holds == ["MOR-S009"] and a.audited and not a.added and not a.removed
               for a in found)
    assert [a.violation for a in found] == [stored[c].violation for c in HOLD_S009]
    # Without stored traces the closures are computed, and hold it in the same cases.
    computed = affected_cases(cases, MOR, index, after)
    assert [a.case_id for a in computed] == HOLD_S009
    assert not any(a.audited for a in computed)


def test_an_edge_edit_reaches_the_rule_that_requires_and_the_closures_it_changes():
    from workbench.audit.impact import affected_cases, edited_rules

    index = PolicyIndex.load(DEMO / "index.json")
    cases = [c for c in load_cases(DEMO / "cases.jsonl") if c.id.startswith("mor-")]
    skill = index[MOR]
    gone = next(e for e in skill.graph.edges if e.source == "MOR-S009")
    draft = SkillGraph(skill.name, skill.description, skill.source,
                       RuleGraph(skill.graph.rules.values(),
                                 [e for e in skill.graph.edges if e != gone]))
    assert edited_rules(skill, draft) == {"MOR-S009": [f"no longer requires {gone.target}"]}
    found = {a.case_id: a for a in affected_cases(cases, MOR, index, with_skill(index, draft),
                                                  audited=_demo_traces())}
    assert set(HOLD_S009) <= set(found)
    # Every case whose closure the removal changes is listed, with what it loses.
    for change in closure_changes(cases, index, with_skill(index, draft), MOR):
        assert found[change.case_id].removed == change.removed


def test_no_edit_reaches_no_case():
    from workbench.audit.impact import affected_cases

    index = PolicyIndex.load(DEMO / "index.json")
    assert affected_cases(load_cases(DEMO / "cases.jsonl"), MOR, index, index) == []
