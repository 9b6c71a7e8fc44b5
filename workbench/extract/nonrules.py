"""Extracted "rules" that carry no obligation: taken out before fusion, kept in the report.

A small extractor turns whatever it reads into rules, including the parts of a policy that
only describe: headings, lead-in lines ("Each user has a profile containing:"), the items of a
data description under such a lead-in ("- date of birth"), and examples ("For example, ...").
Judging those wastes the judge's context and, worse, links real rules to them.

The test is on the quoted source text, not on the model's paraphrase:

- ``heading``: the quote is a Markdown heading line;
- ``example``: it opens with "For example", "E.g." or "Example:";
- ``lead-in``: it ends with ":" and says nothing normative itself;
- ``description item``: it is a list item without a normative word, not written as a
  sentence, under a lead-in line that has none either (a list of attributes, not of
  conditions: the items under "a flight can be cancelled if any of the following is true:"
  are conditions and stay);
- ``enumeration``: it names the values a thing can take ("There are three membership
  levels: ...", "The status of an order can be: ...") and asks nothing else: vocabulary a
  rule may use (and link to), not a rule;
- ``scope``: it says what the agent can help with ("As a retail agent, you can help users:",
  "The agent can help customers with:") and asks nothing else, or is an item of such a list
  without a duty word of its own. A role statement names the agent's tasks; the rules are
  how each task is done (and "requests outside this scope must be declined", which stays).
  All three hand-built demo graphs leave these out (13 extracted "rules" there were scope).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.graph import Rule

_NORMATIVE = re.compile(
    r"\b(must|should|shall|may|can|cannot|can't|need|needs|have to|has to|required?|only|never|"
    r"not|always|allowed|prohibited|forbidden|if|unless|when|whenever|before|after|until|ensure|"
    r"make sure|do|don't|avoid|refuse|deny|confirm|ask|check|verify)\b", re.I)
_EXAMPLE = re.compile(r"^\W*(for example|for instance|e\.g\.|example:)", re.I)
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+")
_ENUMERATION = re.compile(
    r"^\W*there (?:are|is) (?:two|three|four|five|six|seven|eight|nine|ten|\d+|several)\b[^:]*:"
    r"|\bcan be:", re.I)
_DEONTIC = re.compile(
    r"\b(must|should|shall|need|needs|only|never|not|always|cannot|can't|allowed|if|unless)\b", re.I)
_SCOPE = re.compile(r"\b(?:you|the agent|agents?)\s+(?:can|may)\s+(?:help|assist)\b", re.I)


@dataclass(frozen=True)
class NonRule:
    rule_id: str
    reason: str
    quote: str


def _line_at(source: str, pos: int) -> tuple[int, int]:
    start = source.rfind("\n", 0, pos) + 1
    end = source.find("\n", pos)
    return start, len(source) if end < 0 else end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _lead_in(source: str, item_start: int) -> str:
    """The line a list item hangs under: its parent item (the nearest item above indented
    less) or else the nearest line above that is not an item. For "- 0 free bags" under
    "- If the user is a regular member:" that is the condition, not the list's title."""
    start, end = _line_at(source, item_start)
    depth = _indent(source[start:end])
    pos = item_start
    while pos > 0:
        start, end = _line_at(source, pos - 1)
        line = source[start:end]
        if line.strip() and (not _ITEM.match(line) or _indent(line) < depth):
            return line
        pos = start
    return ""


def non_rule_reason(source: str, rule: Rule) -> str | None:
    """Why ``rule`` (spans into ``source``) is not a rule, or None when it may be one."""
    if not rule.spans:
        return None
    quote = " ".join(source[s.start : s.end] for s in rule.spans).strip()
    line_start, line_end = _line_at(source, rule.spans[0].start)
    line = source[line_start:line_end]
    if line.lstrip().startswith("#"):
        return "heading"
    if _EXAMPLE.match(quote):
        return "example"
    if quote.endswith(":") and not _NORMATIVE.search(quote):
        return "lead-in"
    if _ENUMERATION.search(quote) and not _DEONTIC.search(quote):
        return "enumeration"
    if _SCOPE.search(quote) and not _DEONTIC.search(quote):
        return "scope"
    if not _ITEM.match(line):
        return None
    lead = _lead_in(source, line_start)  # what the list item hangs under
    if not _DEONTIC.search(line) and _SCOPE.search(lead):
        return "scope"
    # Attributes are noun phrases; an item written as a sentence ("Each extra bag is 50
    # dollars.") may well be a rule.
    item = _ITEM.sub("", line).strip()
    if (not _NORMATIVE.search(line) and not _is_sentence(item)
            and lead.rstrip().endswith(":") and not _NORMATIVE.search(lead)):
        return "description item"
    return None


def _is_sentence(text: str) -> bool:
    """Four words or more, opening with a capital and closing with a stop: an item opening in
    lower case ("- information about the value of the options.") finishes its lead-in line."""
    text = text.strip("*_ ")
    return len(text.split()) > 3 and not text[:1].islower() and text.endswith((".", "!"))


def split_non_rules(source: str, rules: list[Rule]) -> tuple[list[Rule], list[NonRule]]:
    """``rules`` without the non-rules, and the non-rules with their reasons."""
    judged = [(r, non_rule_reason(source, r)) for r in rules]
    return [r for r, reason in judged if reason is None], [
        NonRule(r.id, reason, " … ".join(source[s.start : s.end] for s in r.spans)[:200])
        for r, reason in judged if reason is not None]
