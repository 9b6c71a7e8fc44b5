"""A large SKILL's whole graph drawn by section, each section collapsible (issue 44 item 6).

The 225-rule SKILL drawn rule by rule was a 537×2928 px column with edges running behind
nodes. Here its rules are grouped by the SKILL's own sections (the Markdown heading above a
rule's first span, at ``level`` or above), and a section that is not open is drawn as one
node ("§ 3. Identity Verification · 12 rules") with the ``require`` edges between sections
merged, each carrying how many rule edges it stands for. Opening a section draws its rules in
place of its node; the section of the rule shown always stays open.

``condense`` returns a plain :class:`RuleGraph` whose extra "rules" are the section nodes, so
the layered layout (``workbench.graph.layout``) places both kinds alike.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from workbench.graph.rule_graph import Edge, Rule, RuleGraph, SkillGraph

SECTION_PREFIX = "§"  # a section node's id: "§1", "§2", ... (never a rule id: ids are checked)
SECTION_MODALITY = "section"
UNPLACED = "Added by edits (no source)"
_HEADING = re.compile(r"(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def sections(skill: SkillGraph, level: int = 2) -> dict[str, list[str]]:
    """Section title → its rules, in the order the sections appear. A rule belongs to the
    last heading of depth ≤ ``level`` before its first span; a rule before any such heading
    to the SKILL's first heading (or "Preamble"); a rule with no span to :data:`UNPLACED`."""
    heads = [(m.start(), m.group(2).strip()) for m in _HEADING.finditer(skill.source)
             if len(m.group(1)) <= level]
    out: dict[str, list[str]] = {title: [] for _, title in heads}
    for rid, rule in skill.graph.rules.items():
        if not rule.spans:
            out.setdefault(UNPLACED, []).append(rid)
            continue
        start = min(s.start for s in rule.spans)
        above = [title for at, title in heads if at <= start]
        title = above[-1] if above else (heads[0][1] if heads else "Preamble")
        out.setdefault(title, []).append(rid)
    return {title: rules for title, rules in out.items() if rules}


@dataclass(frozen=True)
class Condensed:
    """The graph to draw: open sections' rules and closed sections' nodes."""

    graph: RuleGraph
    members: dict[str, list[str]] = field(default_factory=dict)  # section node → its rules
    titles: dict[str, str] = field(default_factory=dict)  # section node → section title
    weights: dict[tuple[str, str], int] = field(default_factory=dict)  # merged edge → count
    opened: tuple[str, ...] = ()  # titles of the sections drawn rule by rule

    def is_section(self, node_id: str) -> bool:
        return node_id in self.members


def section_id(index: int) -> str:
    return f"{SECTION_PREFIX}{index + 1}"


def condense(skill: SkillGraph, groups: Mapping[str, list[str]], open_titles: Iterable[str],
             rule_edges: Iterable[Edge] | None = None) -> Condensed:
    """Collapse every section of ``groups`` not in ``open_titles`` into one node. Edges are
    ``rule_edges`` (default: the graph's), merged per pair of drawn nodes; an edge inside a
    closed section is not drawn (its rules are not)."""
    opened = set(open_titles)
    node_of: dict[str, str] = {}
    nodes: list[Rule] = []
    members: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for i, (title, rules) in enumerate(groups.items()):
        if title in opened:
            for rid in rules:
                node_of[rid] = rid
                nodes.append(skill.graph.rules[rid])
            continue
        sid = section_id(i)
        members[sid], titles[sid] = list(rules), title
        for rid in rules:
            node_of[rid] = sid
        nodes.append(Rule(sid, "", title, SECTION_MODALITY))
    weights: dict[tuple[str, str], int] = {}
    for e in skill.graph.edges if rule_edges is None else rule_edges:
        pair = (node_of.get(e.source), node_of.get(e.target))
        if None in pair or pair[0] == pair[1]:
            continue
        weights[pair] = weights.get(pair, 0) + 1  # type: ignore[index]
    graph = RuleGraph(nodes, [Edge(s, t) for s, t in weights])
    return Condensed(graph, members, titles, weights,
                     tuple(t for t in groups if t in opened))


def section_title(skill: SkillGraph, node_id: object, level: int = 2) -> str | None:
    """The title of the section whose node is ``node_id`` ("§3"), else ``None`` (a click on
    a rule, or on nothing)."""
    if not (isinstance(node_id, str) and node_id.startswith(SECTION_PREFIX)
            and node_id[len(SECTION_PREFIX):].isdigit()):
        return None
    titles = list(sections(skill, level))
    index = int(node_id[len(SECTION_PREFIX):]) - 1
    return titles[index] if 0 <= index < len(titles) else None


def section_label(title: str, count: int, width: int = 18) -> str:
    """A section node's text, at most three lines of about ``width`` characters: its title
    (two lines, shortened with "…") and how many rules it holds."""
    lines = textwrap.wrap(f"{SECTION_PREFIX} {title}", width) or [SECTION_PREFIX]
    if len(lines) > 2:
        lines = [lines[0], lines[1][: width - 1].rstrip() + "…"]
    return "\n".join([*lines, f"{count} rule{'s' if count != 1 else ''}"])
