"""Edit impact: which stored cases see a different closure after a SKILL edit, and whose
verdict flips when re-audited.

Closures are recomputed without a judge (cheap, deterministic), so the comparison does not
depend on when a case was last audited. Each case's seeds are found once, under the current
version, and closed over both versions' ``require`` edges: seeding chooses seeds whose
closure fits a token target, so re-seeding under the edited graph would mix "the edit
changed what this rule requires" with "the edit changed which seeds fit".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.audit import AuditIndex, AuditOptions, audit_case
from workbench.audit.cases import AuditCase
from workbench.graph.policy_index import PolicyIndex
from workbench.graph.rule_graph import SkillGraph
from workbench.vocabulary import JudgeMode, StrategyName

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway


@dataclass
class ClosureChange:
    case_id: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


def with_skill(index: PolicyIndex, skill: SkillGraph) -> PolicyIndex:
    """``index`` with one SKILL replaced in place (or added last)."""
    return PolicyIndex({**index.skills, skill.name: skill}.values())


def closure_changes(
    cases: Iterable[AuditCase],
    before: PolicyIndex,
    after: PolicyIndex,
    skill_name: str,
    strategy: str = StrategyName.CDG,
    options: AuditOptions | None = None,
) -> list[ClosureChange]:
    """Cases whose closure within ``skill_name`` differs between the two indexes."""
    opts = options or AuditOptions(judge_mode=JudgeMode.NONE)
    a_before, a_after = AuditIndex(before), AuditIndex(after)
    changes = []
    graph_after = a_after.skill(skill_name).graph if skill_name in a_after else None
    for case in cases:
        trace = audit_case(case, a_before, strategy, None, opts)
        old = trace.closure.get(skill_name, [])
        seeds = [r for r in trace.seeds.get(skill_name, []) if graph_after and r in graph_after.rules]
        closes = strategy != StrategyName.NO_CLOSURE  # the ablation judges its seeds alone
        new = (graph_after.closure(seeds) if closes else seeds) if seeds else []
        if set(old) != set(new):
            changes.append(ClosureChange(
                case.id,
                added=[r for r in new if r not in set(old)],
                removed=[r for r in old if r not in set(new)],
                before=old,
                after=new,
            ))
    return changes


@dataclass
class Flip:
    case_id: str
    before: bool | None
    after: bool | None
    trace: dict[str, Any]

    @property
    def flipped(self) -> bool:
        return self.before is not None and self.after is not None and self.before != self.after


def reaudit(
    cases: Iterable[AuditCase],
    index: PolicyIndex,
    previous: dict[str, bool | None],
    gateway: ModelGateway | None,
    strategy: str = StrategyName.CDG,
    options: AuditOptions | None = None,
) -> list[Flip]:
    """Re-audit ``cases`` under ``index`` and pair each new verdict with the previous one."""
    aindex = AuditIndex(index)
    traces = (audit_case(case, aindex, strategy, gateway, options or AuditOptions()) for case in cases)
    return [Flip(t.id, previous.get(t.id), t.violation, t.to_dict()) for t in traces]
