"""Edit impact: what an edit of a SKILL does to the cases audited against it, before it is
saved (issue 56 item 2): the cases whose closure holds a rule the edit changes (its
condition, action or modality, its removal, the edges it requires), those whose closure the
edit changes, and whose verdict flips when re-judged with the edited rules.

A rule edit changes no closure ("reverse the action of MOR-S009" keeps every closure as it
was), yet every verdict judged with that rule may change: so :func:`affected_cases` lists the
cases whose closure *holds* an edited rule, read from the stored trace when the case was
audited (what the judge saw), and adds the cases whose closure the edit changes.

Closures are recomputed without a judge (cheap, deterministic), so the comparison does not
depend on when a case was last audited. Each case's seeds are found once, under the current
version, and closed over both versions' ``require`` edges: seeding chooses seeds whose
closure fits a token target, so re-seeding under the edited graph would mix "the edit
changed what this rule requires" with "the edit changed which seeds fit".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.audit import AuditIndex, AuditOptions, audit_case
from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace
from workbench.graph.diff import MEANING_FIELDS, diff_skills
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
    a_before = AuditIndex(before)
    graph_after = after.skills[skill_name] if skill_name in after.skills else None
    changes = []
    for case in cases:
        change = _closure_change(audit_case(case, a_before, strategy, None, opts), graph_after,
                                 skill_name, strategy)
        if change.added or change.removed:
            changes.append(change)
    return changes


def _closure_change(trace: AuditTrace, after: SkillGraph | None, skill_name: str,
                    strategy: str) -> ClosureChange:
    """The closure of ``trace`` within ``skill_name``, and the same seeds closed over the
    edited SKILL ``after``."""
    old = trace.closure.get(skill_name, [])
    seeds = [r for r in trace.seeds.get(skill_name, []) if after and r in after.graph.rules]
    closes = strategy != StrategyName.NO_CLOSURE  # the ablation judges its seeds alone
    new = (after.graph.closure(seeds) if after and closes else seeds) if seeds else []
    return ClosureChange(trace.id, added=[r for r in new if r not in set(old)],
                         removed=[r for r in old if r not in set(new)], before=old, after=new)


def edited_rules(before: SkillGraph, after: SkillGraph) -> dict[str, list[str]]:
    """Every rule whose judging the edit ``before`` -> ``after`` changes, with what changed
    in words: its condition, action, modality or source span; its removal or addition; the
    rules it requires (an edge belongs to the rule that requires: judging it now needs, or
    no longer needs, the other). Provenance and confidence alone change no judging."""
    change = diff_skills(before, after)
    out: dict[str, list[str]] = {}
    for c in change.rules_changed:
        for f in c.changes:
            if f.field in MEANING_FIELDS:
                out.setdefault(c.rule_id, []).append(f"{f.field} changed")
    for r in change.rules_removed:
        out.setdefault(r.id, []).append("removed")
    for r in change.rules_added:
        out.setdefault(r.id, []).append("added")
    for e in change.edges_added:
        out.setdefault(e.source, []).append(f"now requires {e.target}")
    for e in change.edges_removed:
        out.setdefault(e.source, []).append(f"no longer requires {e.target}")
    return out


@dataclass
class AffectedCase:
    """A stored case an edit reaches: the edited rules its closure holds, and how the edit
    changes that closure. ``audited``: the closure is the stored trace's (what the judge
    saw), else it was computed for this check; ``violation``: the stored verdict, if any."""

    case_id: str
    holds: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    audited: bool = False
    violation: bool | None = None


def affected_cases(
    cases: Iterable[AuditCase],
    skill_name: str,
    before: PolicyIndex,
    after: PolicyIndex,
    audited: Mapping[str, AuditTrace] | None = None,
    strategy: str = StrategyName.CDG,
    options: AuditOptions | None = None,
) -> list[AffectedCase]:
    """The cases an edit of ``skill_name`` (``before`` -> ``after``) reaches, in the order of
    ``cases``: those whose closure holds an edited rule (:func:`edited_rules`) and those
    whose closure the edit changes. ``audited``: the stored trace of each audited case (by
    case id), whose closure is the one judged; the others' closures are computed here without
    a judge, and so are everyone's when the edit adds or removes rules or edges (seeds found
    under ``before``, closed over ``after``, as :func:`closure_changes` does)."""
    if skill_name not in before.skills or skill_name not in after.skills:
        raise ValueError(f"SKILL {skill_name!r} is not in both indexes; load its versions first")
    edits = edited_rules(before[skill_name], after[skill_name])
    if not edits:
        return []
    change = diff_skills(before[skill_name], after[skill_name])
    structural = bool(change.rules_added or change.rules_removed
                      or change.edges_added or change.edges_removed)
    stored = audited or {}
    opts = options or AuditOptions(judge_mode=JudgeMode.NONE)
    a_before = AuditIndex(before)
    found = []
    for case in cases:
        trace = stored.get(case.id)
        computed = (audit_case(case, a_before, strategy, None, opts)
                    if trace is None or structural else None)
        judged = trace if trace is not None else computed
        closure = judged.closure.get(skill_name, []) if judged is not None else []
        moved = (_closure_change(computed, after[skill_name], skill_name, strategy)
                 if computed is not None and structural else None)
        holds = [r for r in closure if r in edits]
        if holds or (moved and (moved.added or moved.removed)):
            found.append(AffectedCase(
                case.id, holds=holds, added=moved.added if moved else [],
                removed=moved.removed if moved else [], audited=trace is not None,
                violation=trace.violation if trace is not None else None))
    return found


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
