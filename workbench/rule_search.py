"""Find rules by text: the graph page's search box and the CLI use the same matching."""

from __future__ import annotations

from workbench.graph import SkillGraph


def search_rules(skill: SkillGraph, query: str) -> list[str]:
    """Rule ids whose id, condition, action or source text contains every query word."""
    words = [w.lower() for w in query.split() if w]
    if not words:
        return list(skill.graph.rules)
    hays = {rid: f"{rid} {r.condition} {r.action} {skill.rule_text(rid)}".lower()
            for rid, r in skill.graph.rules.items()}
    return [rid for rid, hay in hays.items() if all(w in hay for w in words)]
