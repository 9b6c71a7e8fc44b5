"""Rendering rules as the short blocks a judge reads.

Two styles, both headed by the rule id the judge cites:

- ``full`` (the original): id and modality, ``When:``, ``Then:``, the verbatim ``Source:``
  quote and a ``Requires:`` line. Rule density (``stats``) and the recorded judge exchanges
  in ``fixtures/recordings`` use it, so it stays available unchanged.
- ``compact`` (the second paper's three-line block): condition, action, verbatim
  span. The quote is left out when it only restates the condition and action word for word
  (structurally compiled guidelines, whose action *is* the span), and ``Requires:`` is left
  out because the closure already puts every required rule in the same context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.graph.rule_graph import SkillGraph
from workbench.vocabulary import Render, values

_WORD = re.compile(r"\w+")

RENDER_STYLES = values(Render)
DEFAULT_RENDER_STYLE = Render.FULL


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def render_rule(skill: SkillGraph, rule_id: str, style: str = DEFAULT_RENDER_STYLE) -> str:
    rule = skill.graph.rules[rule_id]
    source = " … ".join(" ".join(skill.span_text(s).split()) for s in rule.spans)  # "" without spans
    if style == Render.COMPACT:
        lines = [f"[{rule.id}] When: {rule.condition}", f"  {rule.modality.capitalize()}: {rule.action}"]
        if source and not _words(source) <= _words(f"{rule.condition} {rule.action}"):
            lines.append(f'  Source: "{source}"')
        return "\n".join(lines)
    if style != Render.FULL:
        raise ValueError(f"unknown render style {style!r}; choose one of {', '.join(RENDER_STYLES)}")
    lines = [
        f"[{rule.id}] ({rule.modality})",
        f"  When: {rule.condition}",
        f"  Then: {rule.action}",
    ]
    if source:
        lines.append(f'  Source: "{source}"')
    requires = skill.graph.requires(rule_id)
    if requires:
        lines.append(f"  Requires: {', '.join(requires)}")
    return "\n".join(lines)


def render_rules(
    skill: SkillGraph, rule_ids: Iterable[str], style: str = DEFAULT_RENDER_STYLE
) -> str:
    """Rules of one SKILL under a header naming the SKILL."""
    sep = "\n" if style == Render.COMPACT else "\n\n"
    body = sep.join(render_rule(skill, rid, style) for rid in rule_ids)
    return f"## SKILL: {skill.name}\n\n{body}" if body else ""
