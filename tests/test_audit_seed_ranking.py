"""Scored seeding (rule_ranking.py): the whole case finds the governing workflow, seeds fit a
soft token target with their closure, EmptySeed per SKILL, and the compact rendering."""

from __future__ import annotations

import pytest

from workbench.audit.cases import AuditCase, Turn
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions, ContextUnavailable
from workbench.audit.rule_ranking import case_query, choose_seeds, heading_paths, section_of
from workbench.audit.strategies import get_strategy
from workbench.graph import Edge, PolicyIndex, Rule, RuleGraph, SkillGraph, Span
from workbench.graph.render import render_rule, render_rules
from workbench.llm.tokens import count_tokens

# Two sibling workflows whose steps use the same words ("appointment", "time", "confirm");
# only the section heading says which request each belongs to.
WORKFLOWS = {
    "reschedule": ("Reschedule an existing appointment", [
        "Ask for the booking reference of the existing appointment.",
        "Offer open times for the appointment and ask the patient to choose one.",
        "Confirm the new appointment time and cancel the old slot.",
    ]),
    "book": ("Book a new appointment", [
        "Ask for the patient's full name and date of birth.",
        "Offer open times for the appointment and ask the patient to choose one.",
        "Confirm the appointment time and send a confirmation message.",
    ]),
}
GUIDELINES = [("identity", "Never share medical details before verifying the caller's identity.")]


def build_skill(name: str = "clinic", order: tuple[str, ...] = ("book", "reschedule")) -> SkillGraph:
    parts = [f"---\nname: {name}\ndescription: Clinic front-desk policy.\n---\n\n# Clinic policy\n"]
    size = len(parts[0])
    rules, edges = [], []

    def add(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)

    for key in order:
        title, steps = WORKFLOWS[key]
        add(f"\n## Workflow: {title}\n")
        for i, step in enumerate(steps, 1):
            add(f"\n### Step {i}\n\n")
            rules.append(Rule(f"{key}.s{i}", f"step {i} of this workflow", step, "required",
                              (Span(size, size + len(step)),)))
            add(step + "\n")
            if i > 1:
                edges.append(Edge(f"{key}.s{i}", f"{key}.s{i - 1}"))
    add("\n## Always\n\n")
    for key, text in GUIDELINES:
        rules.append(Rule(f"always.{key}", "throughout the call", text, "prohibited",
                          (Span(size, size + len(text)),)))
        add(text + "\n")
    return SkillGraph(name, "Clinic front-desk policy.", "".join(parts), RuleGraph(rules, edges))


@pytest.fixture
def index() -> AuditIndex:
    return AuditIndex(PolicyIndex([build_skill()]))


REPLY = "I have Tuesday at 3 pm open. Shall I confirm that appointment time for you?"


def case(history: list[Turn]) -> AuditCase:
    return AuditCase("c1", REPLY, skills=["clinic"], context=history)


def one_workflow(index: AuditIndex) -> int:
    """A target with room for one workflow's three steps (and the header), not for two."""
    rs = index.ranked("clinic")
    costs = rs.tokens_of("compact")
    return rs.header_tokens + max(sum(costs[f"{k}.s{i}"] for i in (1, 2, 3)) for k in WORKFLOWS)


def seeds_and_closure(index: AuditIndex, c: AuditCase, target: int | None = None):
    target = target or one_workflow(index)
    t = audit_case(c, index, "cdg", None,
                   AuditOptions(judge_mode="none").with_context(seed_target=target))
    assert t.error is None, t.error
    return t.seeds["clinic"], t.closure["clinic"]


@pytest.mark.parametrize("history, picked, sibling", [
    ([Turn("user", "Hi, I need to reschedule my existing appointment, ref 4471."),
      Turn("assistant", "Sure. Which times suit you?"),
      Turn("user", "Tuesday afternoon works.")], "reschedule", "book"),
    ([Turn("user", "I'd like to book a new appointment, I'm a new patient."),
      Turn("assistant", "Of course. What is your full name and date of birth?"),
      Turn("user", "Ana Ruiz, 3 May 1990.")], "book", "reschedule"),
], ids=["reschedule", "book"])
def test_history_naming_the_request_picks_its_workflow_over_the_sibling(index, history, picked, sibling):
    seeds, closure = seeds_and_closure(index, case(history))
    assert seeds[0].startswith(f"{picked}.")
    # The governing step (confirm the new time / the booking) and every step it requires are
    # in context; nothing of the sibling workflow is.
    assert {f"{picked}.s1", f"{picked}.s2", f"{picked}.s3"} <= set(closure)
    assert not any(r.startswith(f"{sibling}.") for r in closure)


def test_without_history_the_reply_alone_cannot_tell_the_siblings_apart(index):
    # The control for the two cases above: the reply's words fit both workflows, so the
    # choice there came from the history, not from the reply.
    rs = index.ranked("clinic")
    q = case_query(case([]))
    scores = dict(zip(rs.ids, rs.scores(q, ContextOptions().weights).tolist(), strict=True))
    assert scores["book.s2"] == pytest.approx(scores["reschedule.s2"])


def test_recent_turns_weigh_more_than_old_ones(index):
    # The conversation moved from booking to rescheduling: the recent turn wins.
    history = [Turn("user", "I want to book a new appointment."),
               Turn("assistant", "Sure, what's your name?"),
               Turn("user", "Actually no, I already have one. Please reschedule my existing "
                            "appointment instead, ref 4471.")]
    seeds, _ = seeds_and_closure(index, case(history))
    assert seeds[0].startswith("reschedule.")


def test_section_context_ignores_the_document_title():
    skill = build_skill()
    starts, paths = heading_paths(skill.source)
    rule = skill.graph.rules["book.s2"]
    assert section_of(starts, paths, rule.spans[0].start) == (
        "Clinic policy / Workflow: Book a new appointment / Step 2")
    # Every rule sits under "Clinic policy": the ranking drops that common prefix.
    ranked = AuditIndex(PolicyIndex([skill])).ranked("clinic")
    assert ranked.sections[ranked.ids.index("book.s2")] == "Workflow: Book a new appointment / Step 2"


def test_seeds_fit_the_target_with_their_whole_closure(index):
    rs = index.ranked("clinic")
    history = [Turn("user", "Please reschedule my existing appointment.")]
    q = case_query(case(history))
    costs = rs.tokens_of("compact")
    for target in (40, 80, 160, 400):
        got = choose_seeds({"clinic": rs}, q, target)
        rules = got.rules["clinic"]
        # Complete closure: every rule a chosen rule requires is in context.
        assert set(rs.skill.graph.closure(rules)) == set(rules)
        assert got.estimated_tokens == sum(costs[r] for r in rules) + rs.header_tokens
        if len(got.seeds["clinic"]) > 1:
            assert got.estimated_tokens <= target
    small = choose_seeds({"clinic": rs}, q, 40).rules["clinic"]
    large = choose_seeds({"clinic": rs}, q, 400).rules["clinic"]
    assert set(small) < set(large)


def test_the_best_seed_is_kept_over_a_soft_target_but_a_hard_budget_refuses(index):
    c = case([Turn("user", "Please reschedule my existing appointment.")])
    t = audit_case(c, index, "cdg", None,
                   AuditOptions(judge_mode="none").with_context(seed_target=5))
    assert t.error is None and t.seeds["clinic"] and t.context_tokens > 5
    t = audit_case(c, index, "cdg", None, AuditOptions(judge_mode="none").with_context(budget=5))
    assert t.error.kind == "BudgetExceeded" and t.closure["clinic"]


def test_empty_seed_per_skill_contributes_the_unseeded_skill_whole():
    other = SkillGraph("parking", "Parking garage rules.", "Cars park on level two.",
                       RuleGraph([Rule("P1", "a car arrives", "Cars park on level two.",
                                       "required", (Span(0, 23),))]))
    index = AuditIndex(PolicyIndex([build_skill(), other]))
    c = AuditCase("c2", REPLY, skills=["clinic", "parking"],
                  context=[Turn("user", "Reschedule my appointment please.")])
    strat = get_strategy("cdg")
    whole_case = strat.build(c, [], ["clinic", "parking"], index, ContextOptions())
    assert "parking" not in whole_case.closure and whole_case.fallback is None
    per_skill = strat.build(c, [], ["clinic", "parking"], index,
                            ContextOptions(empty_seed="per-skill"))
    assert per_skill.closure["parking"] == ["P1"]
    assert per_skill.fallback == "per-skill:parking"
    assert "[P1]" in per_skill.text
    with pytest.raises(ValueError, match="empty-seed policy"):
        strat.build(c, [], ["clinic"], index, ContextOptions(empty_seed="sometimes"))


def test_nothing_shared_is_an_empty_seed_outcome(index):
    c = AuditCase("c3", "Zebra quokka.", skills=["clinic"])
    with pytest.raises(ContextUnavailable) as err:
        get_strategy("cdg").build(c, [], ["clinic"], index, ContextOptions())
    assert err.value.kind == "EmptySeed" and "case's words" in str(err.value)


def test_compact_rendering_is_three_lines_with_the_id_and_cheaper_than_full():
    skill = build_skill()
    block = render_rule(skill, "book.s2", "compact").splitlines()
    # The quote restates the action word for word here, so it is left out.
    assert block == ["[book.s2] When: step 2 of this workflow",
                     "  Required: Offer open times for the appointment and ask the patient to "
                     "choose one."]
    paraphrased = SkillGraph("p", "", "Refunds within 30 days.", RuleGraph(
        [Rule("R1", "a refund is asked", "refund it", "required", (Span(0, 23),))]))
    lines = render_rule(paraphrased, "R1", "compact").splitlines()
    assert len(lines) == 3 and lines[0].startswith("[R1] ") and '"Refunds within 30 days."' in lines[2]
    ids = list(skill.graph.rules)
    full, compact = render_rules(skill, ids, "full"), render_rules(skill, ids, "compact")
    assert count_tokens(compact) < 0.75 * count_tokens(full)
    assert all(f"[{rid}]" in compact for rid in ids)  # the judge can still cite every rule
    with pytest.raises(ValueError, match="render style"):
        render_rule(skill, "book.s2", "fancy")


def test_keyword_seeding_and_full_rendering_stay_available(index):
    c = case([Turn("user", "Reschedule my appointment.")])
    t = audit_case(c, index, "cdg", None, AuditOptions(judge_mode="none").with_context(
        seeding="keywords", render="full"))
    assert t.error is None and "  Then: " in t.context
    with pytest.raises(ValueError, match="unknown seeding"):
        get_strategy("cdg").build(c, ["x"], ["clinic"], index, ContextOptions(seeding="magic"))


def test_cli_audit_takes_the_seeding_options(tmp_path):
    import json
    from pathlib import Path

    from workbench.cli import main

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "audit"
    common = ["audit", "--index", str(fix / "merchant_index.json"), "--cases",
              str(fix / "merchant_cases.jsonl"), "--strategy", "cdg", "--no-judge"]
    assert main([*common, "--target-tokens", "150", "--out", str(tmp_path / "a.jsonl")]) == 0
    small = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert small and all(t["context_tokens"] <= 150 for t in small if not t.get("error"))
    assert main([*common, "--seeding", "keywords", "--render", "full",
                 "--out", str(tmp_path / "b.jsonl")]) == 0
    v1 = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert any("  Then: " in t["context"] for t in v1)
