"""Rendering rules as the short blocks a judge reads: id, modality, condition, action and the
verbatim source text. The same rendering is used for rule density (``stats``) and for audit
contexts, so token counts agree across the product."""

from __future__ import annotations

from collections.abc import Iterable

from workbench.graph import SkillGraph


def render_rule(skill: SkillGraph, rule_id: str) -> str:
    rule = skill.graph.rules[rule_id]
    lines = [
        f"[{rule.id}] ({rule.modality})",
        f"  When: {rule.condition}",
        f"  Then: {rule.action}",
    ]
    if rule.spans:
        source = " … ".join(" ".join(skill.span_text(s).split()) for s in rule.spans)
        lines.append(f'  Source: "{source}"')
    requires = skill.graph.requires(rule_id)
    if requires:
        lines.append(f"  Requires: {', '.join(requires)}")
    return "\n".join(lines)


def render_rules(skill: SkillGraph, rule_ids: Iterable[str]) -> str:
    """Rules of one SKILL under a header naming the SKILL."""
    body = "\n\n".join(render_rule(skill, rid) for rid in rule_ids)
    return f"## SKILL: {skill.name}\n\n{body}" if body else ""
