"""Export a policy index to GraphML (for Gephi, yEd, networkx and friends)."""

from __future__ import annotations

import io

import networkx as nx

from workbench.graph.policy_index import PolicyIndex


def to_networkx(index: PolicyIndex) -> nx.DiGraph:
    """One directed graph; node ids are ``skill::rule`` so rule ids may repeat across SKILLs."""
    g = nx.DiGraph()
    for skill in index:
        for rule in skill.graph.rules.values():
            g.add_node(
                f"{skill.name}::{rule.id}",
                skill=skill.name,
                rule_id=rule.id,
                condition=rule.condition,
                action=rule.action,
                modality=rule.modality,
                source_text=skill.rule_text(rule.id),
                spans=";".join(f"{s.start}-{s.end}" for s in rule.spans),
            )
        for e in skill.graph.edges:
            g.add_edge(f"{skill.name}::{e.source}", f"{skill.name}::{e.target}", type=e.type)
    return g


def to_graphml(index: PolicyIndex) -> str:
    buf = io.BytesIO()
    nx.write_graphml(to_networkx(index), buf, encoding="utf-8")
    return buf.getvalue().decode("utf-8")
