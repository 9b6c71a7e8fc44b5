"""Edge candidates read from the SKILL text itself, not from a model.

A ``require`` edge a small model cannot see (the two rules share no words, or sit in
different blocks) is often written into the document's structure. Each finder maps such a
cue onto the rules whose spans hold it:

- ``procedure``: a numbered list (``1.`` ``2)``), numbered sibling headings (``Step 2``,
  ``Phase three``) or lines that open with ``Step n``/``Phase n`` (``**Phase 2 - Verify.**``):
  every rule of step *n* requires the rules of step *n-1*, so the closure of a late step
  reaches every earlier one. A sequence word among a rule's opening words (``then``, ``next``,
  ``after that``) or an ordinal opening it (``Second,``) links it to the previous rule of the
  same section.
- ``definition``: a term defined in one place (``X means ...``, ``X is defined as``, an item
  of a Definitions/Glossary section, a bold term followed by ``is``/``means``/``:``) and used
  by a rule elsewhere: the using rule requires the defining rule.
- ``cross-reference``: ``see Section 7.6``, ``as described in ...``, ``per the refund
  policy``: the referring rule requires the rules of the section named.
- ``heading``: a sub-section titled as exceptions, conditions or eligibility under a rule's
  section: the section's rules require the sub-section's rules.
- ``continuation``: a rule that opens with ``Otherwise``, ``In other cases``, ``Even``,
  ``These``... continues the rule before it in the same section.

The kinds that were right most of the time on the three hand-built demo graphs (airline,
retail and the 225-rule merchant refund policy, 5 to 9 of 10 exact, more on a reference path)
are ``direct``: kept as edges without asking a model, since the 1.5B default model cannot tell
a true ``require`` pair from a similar one (AUC 0.55) and would only lose them. Direct are the
order of one numbered list or of numbered sibling headings, a cross-reference that resolves to
exactly one section, a definition's use, a rule that opens with a continuation word and a rule
whose opening words carry a sequence word. Heading nesting, a cross-reference to several
sections and "follows in the same section" (right 2 to 4 times in 10) are offered to the fuser
to confirm and otherwise wait as proposals for an author.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from workbench.extract.fusion import content_words, rule_words
from workbench.graph import Rule, Span
from workbench.skill.document import Block, SkillDoc

_ITEM = re.compile(r"^([ \t]*)(\d{1,3})[.)][ \t]+\S", re.M)
_PROCEDURE_HEADING = re.compile(r"procedure|process|steps|workflow|phases|how to", re.I)
_OPENING_WORDS = 6  # "The agent should then ask": a discourse word sits among the first few
_SEQUENCE = re.compile(r"\b(then|next|afterwards|after that|finally|thereafter|subsequently)\b", re.I)
_CONTINUES = re.compile(
    r"^\W*(otherwise|in other cases|in all other cases|in that case|even|these|this|such|"
    r"also|however|except|other )", re.I)
_SECTION_REF = re.compile(
    r"\b(?:see|as (?:described|defined|set out|explained|listed|specified) in|under|per|"
    r"according to|in accordance with)\s+(?:section|§)\s*(\d+(?:\.\d+)*)", re.I)
_NAMED_REF = re.compile(
    r"\b(?:see|as (?:described|defined|set out|explained) in|per|according to)\s+the\s+"
    r"([\w' -]{3,60}?)\s+(?:section|policy|rules|procedure)\b", re.I)
_MEANS = re.compile(
    r"(?:^|(?<=[.!?\n]))[ \t\-*>]*(?:\*\*)?(?:an?\s+|the\s+)?[\"“']?([A-Za-z][\w' -]{1,48}?)[\"”']?(?:\*\*)?"
    r"\s+(?:means|is defined as|refers to|is a term for)\b", re.I)
_BOLD_DEF = re.compile(r"\*\*([^*\n]{2,48})\*\*\s*(?::|—|-|\bis\b|\bare\b|\bmeans\b)", re.I)
_GLOSSARY_ITEM = re.compile(
    r"^[ \t]*[-*][ \t]+(?:\*\*)?[\"“']?([^:*\n\"”']{2,48}?)[\"”']?(?:\*\*)?[ \t]*(?::|—|–| - )", re.M)
_GLOSSARY_HEADING = re.compile(r"definition|glossary|terms\b|terminology", re.I)
_NESTED_HEADING = re.compile(r"exception|condition|eligib|requirement|restriction|limit", re.I)
_SECTION_NUMBER = re.compile(r"^\s*(?:section\s+)?(\d+(?:\.\d+)*)\.?\s", re.I)
_SHARED_TERMS = 2  # one shared word ("order", "refund") links half a policy; two name a topic
_GENERIC_TERMS = frozenset({"the", "this", "that", "it", "a", "an", "note", "example", "for example"})


@dataclass(frozen=True)
class EdgeCandidate:
    """``source`` requires ``target`` because of a cue at ``evidence`` in the source text."""

    source: str
    target: str
    kind: str
    confidence: float
    evidence: Span
    direct: bool
    note: str = ""


@dataclass(frozen=True)
class _Placed:
    rule: Rule
    start: int
    end: int
    block: int


def _place(doc: SkillDoc, rules: Iterable[Rule]) -> list[_Placed]:
    out = []
    for r in rules:
        if not r.spans:
            continue
        start, end = min(s.start for s in r.spans), max(s.end for s in r.spans)
        block = next((b.index for b in doc.blocks if b.start <= start < b.end), -1)
        out.append(_Placed(r, start, end, block))
    return sorted(out, key=lambda p: (p.start, p.end))


def _inside(placed: list[_Placed], a: int, b: int) -> list[_Placed]:
    """Rules whose spans start within ``[a, b)``."""
    return [p for p in placed if a <= p.start < b]


def _holding(placed: list[_Placed], at: int) -> list[_Placed]:
    """Rules whose spans cover the position ``at`` (some span, not only the hull)."""
    return [p for p in placed if any(s.start <= at < s.end for s in p.rule.spans)]


def _text(doc: SkillDoc, p: _Placed) -> str:
    return " ".join(doc.source[s.start : s.end] for s in p.rule.spans)


def _with_parents(doc: SkillDoc) -> Iterator[tuple[Block, Block | None]]:
    """Each block with the nearest headed block above it at a higher level (None: none)."""
    parents: list[Block] = []
    for block in doc.blocks:
        while parents and parents[-1].level >= block.level:
            parents.pop()
        yield block, parents[-1] if parents else None
        if block.heading is not None:
            parents.append(block)


# -- procedure ----------------------------------------------------------------------------
def _numbered_lists(block: Block) -> list[list[tuple[int, int]]]:
    """Absolute ``(start, end)`` of the items of each numbered list in a block: items at one
    indent numbered 1, 2, 3... without a break in the numbering."""
    lists: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int, int, str]] = []  # start, number, indent-width, indent
    for m in _ITEM.finditer(block.text):
        indent, number = m.group(1), int(m.group(2))
        if current and current[-1][3] == indent and number == current[-1][1] + 1:
            current.append((m.start(), number, len(indent), indent))
            continue
        if current and len(indent) > current[-1][2]:
            continue  # a nested list inside the current item
        if len(current) >= 2:
            lists.append(_item_ranges(block, current))
        current = [(m.start(), number, len(indent), indent)] if number == 1 else []
    if len(current) >= 2:
        lists.append(_item_ranges(block, current))
    return lists


def _item_ranges(block: Block, items: list[tuple[int, int, int, str]]) -> list[tuple[int, int]]:
    starts = [i[0] for i in items]
    ends = starts[1:] + [_list_end(block.text, starts[-1])]
    return [(block.start + a, block.start + b) for a, b in zip(starts, ends, strict=True)]


def _list_end(text: str, last_item: int) -> int:
    """The last item runs to a blank line followed by unindented text, or the block's end."""
    m = re.compile(r"\n[ \t]*\n(?=[^ \t\n])").search(text, last_item)
    return m.start() if m else len(text)


def _chain(placed: list[_Placed], ranges: list[tuple[int, int]], confidence: float,
           note: str) -> list[EdgeCandidate]:
    """Every rule of step *n* (the rules starting in ``ranges[n]``) requires those of *n-1*."""
    steps = [_inside(placed, a, b) for a, b in ranges]
    return [EdgeCandidate(later.rule.id, earlier.rule.id, "procedure", confidence,
                          Span(a, min(b, a + 4)), True, f"{note} {n + 1} after {n}")
            for n, (a, b) in enumerate(ranges[1:], 1)
            for later in steps[n] for earlier in steps[n - 1] if later.rule.id != earlier.rule.id]


# Steps written out: numbers as words, a line per step, ordinals.
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve")
_STEP_NUMBER = rf"(\d{{1,3}}|{'|'.join(_NUMBER_WORDS)})"
_STEP_HEADING = re.compile(rf"^((?:step|phase|stage)\s+)?{_STEP_NUMBER}\b", re.I)
# A step written as a paragraph or line of its own: "**Phase 2 - Verify.** The agent must ...",
# "Step 3: Resolve the request."
_STEP_LINE = re.compile(rf"^[ \t>]*(?:\*\*|__|\*|_)?(?:step|phase|stage)\s+{_STEP_NUMBER}\b", re.I | re.M)
# "Second, the agent must ...": an ordinal only as a rule's first word ("the second passenger"
# is no step).
_ORDINAL_OPENER = re.compile(
    r"^\W*(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|lastly)\b\s*,", re.I)


def _step_number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS.index(word.casefold()) + 1


def _step_paragraphs(block: Block) -> list[tuple[int, int]]:
    """Absolute ``(start, end)`` of the steps of a block written as lines that open with
    ``Step 1``, ``Phase 2``... numbered from 1 without a break (the first run of them)."""
    marks: list[int] = []
    for m in _STEP_LINE.finditer(block.text):
        if _step_number(m.group(1)) == len(marks) + 1:
            marks.append(m.start())
        elif marks:
            break
    if len(marks) < 2:
        return []
    ends = marks[1:] + [len(block.text)]
    return [(block.start + a, block.start + b) for a, b in zip(marks, ends, strict=True)]


def procedure_candidates(doc: SkillDoc, placed: list[_Placed]) -> list[EdgeCandidate]:
    out: list[EdgeCandidate] = []
    for block in doc.blocks:
        for items in _numbered_lists(block):
            out.extend(_chain(placed, items, 0.9, "numbered step"))
        out.extend(_chain(placed, _step_paragraphs(block), 0.85, "step"))
    # Numbered sibling headings (``## Step 1``, ``### Phase 2 - ...``) under one parent; bare
    # numbers (``### 2. Verify``) only under a procedure-like parent, since numbered sections
    # of a policy ("7. Returns", "8. Refunds") are not steps.
    by_parent: dict[int, list[tuple[int, Block]]] = {}
    for block, parent in _with_parents(doc):
        m = _STEP_HEADING.match(block.heading) if block.heading else None
        procedural = parent is not None and _PROCEDURE_HEADING.search(parent.heading or "")
        if m and (m.group(1) or procedural):
            by_parent.setdefault(parent.index if parent else -1, []).append((_step_number(m.group(2)), block))
    for seq in by_parent.values():
        run: list[tuple[int, Block]] = []
        for number, block in seq:
            if run and number != run[-1][0] + 1:
                out.extend(_heading_chain([b for _, b in run], placed))
                run = []
            if run or number == 1:
                run.append((number, block))
        out.extend(_heading_chain([b for _, b in run], placed))
    # Sequence words in prose: "The agent should then ask ..." follows the rule before it. Only
    # among a rule's opening words: later in the sentence they order its own clauses ("calls
    # the tool and then tells the customer") or its effects ("may not return it afterwards").
    for prev, cur in zip(placed, placed[1:], strict=False):
        if prev.block == cur.block and prev.rule.id != cur.rule.id:
            text = _text(doc, cur)
            m = _SEQUENCE.search(" ".join(text.split()[:_OPENING_WORDS])) or _ORDINAL_OPENER.match(text)
            if m:
                at = cur.rule.spans[0].start
                out.append(EdgeCandidate(cur.rule.id, prev.rule.id, "procedure", 0.7, Span(at, at + 1),
                                         True, f"'{m.group(1)}' follows the rule before"))
    return out


def _heading_chain(run: list[Block], placed: list[_Placed]) -> list[EdgeCandidate]:
    if len(run) < 2:
        return []
    # Every rule of a later phase requires the first rule of the phase before it: the chain
    # reaches every earlier phase without an edge per pair of rules.
    steps = [_inside(placed, b.start, b.end) for b in run]
    return [EdgeCandidate(later.rule.id, earlier.rule.id, "procedure", 0.85,
                          Span(run[n].start, run[n].start + 1), True,
                          f"section '{run[n].heading}' after '{run[n - 1].heading}'")
            for n in range(1, len(run)) for later in steps[n] for earlier in steps[n - 1][:1]]


# -- definitions --------------------------------------------------------------------------
def defined_terms(doc: SkillDoc) -> list[tuple[str, Span, float]]:
    """``(term, where it is defined, confidence)`` for every definition cue in the text."""
    found: list[tuple[str, Span, float]] = []
    for block in doc.blocks:
        glossary = bool(block.heading and _GLOSSARY_HEADING.search(block.heading))
        patterns = [(_MEANS, 0.8), (_BOLD_DEF, 0.5)] + ([(_GLOSSARY_ITEM, 0.8)] if glossary else [])
        for pattern, confidence in patterns:
            for m in pattern.finditer(block.text):
                term = " ".join(m.group(1).split()).strip(" -*").casefold()
                if len(term) < 3 or term in _GENERIC_TERMS or len(term.split()) > 5:
                    continue
                a = block.start + m.start(1)
                found.append((term, Span(a, a + len(m.group(1))), confidence))
    best: dict[str, tuple[str, Span, float]] = {}
    for term, span, conf in found:  # one definition per term: the most confident, then first
        if term not in best or conf > best[term][2]:
            best[term] = (term, span, conf)
    return list(best.values())


def _uses(term: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(term)}(?:s|es)?(?![\w-])", text, re.I) is not None


def definition_candidates(doc: SkillDoc, placed: list[_Placed]) -> list[EdgeCandidate]:
    out = []
    for term, where, confidence in defined_terms(doc):
        definers = _holding(placed, where.start)
        if not definers:
            # A definition that is not itself a rule: the rules of its sentence's paragraph.
            definers = [p for p in placed if p.start <= where.start < p.end]
        for user in placed:
            if any(user.rule.id == d.rule.id for d in definers):
                continue
            if not _uses(term, f"{user.rule.condition} {_text(doc, user)}"):
                continue
            out.extend(EdgeCandidate(user.rule.id, d.rule.id, "definition", confidence, where, True,
                                     f"uses '{term}', defined here") for d in definers)
    return out


# -- cross-references ---------------------------------------------------------------------
def _section_by_number(doc: SkillDoc, number: str) -> list[Block]:
    return [b for b in doc.blocks if b.heading and (m := _SECTION_NUMBER.match(b.heading))
            and m.group(1).rstrip(".") == number.rstrip(".")]


def _section_by_name(doc: SkillDoc, name: str) -> list[Block]:
    words = set(re.findall(r"\w+", name.casefold())) - {"the", "a", "an", "of", "and"}
    if not words:
        return []
    return [b for b in doc.blocks if b.heading
            and words <= set(re.findall(r"\w+", b.heading.casefold()))]


def cross_reference_candidates(doc: SkillDoc, placed: list[_Placed]) -> list[EdgeCandidate]:
    """The referring rule requires the rules of the section named. A section holds several
    rules; the ones sharing the most content words with the referring rule are the ones meant
    (direct when the reference resolves to one section), the rest are only offered. With none
    sharing a word, the section's first rule stands for it."""
    out = []
    for pattern, resolve in ((_SECTION_REF, _section_by_number), (_NAMED_REF, _section_by_name)):
        for m in pattern.finditer(doc.source, doc.body_start):
            sections = resolve(doc, m.group(1))
            referrers = _holding(placed, m.start()) or _holding(placed, max(m.start() - 2, 0))
            if not sections or not referrers:
                continue
            one = len(sections) == 1
            evidence = Span(m.start(), m.end())
            for section in sections:
                targets = _inside(placed, section.start, section.end)
                for r in referrers:
                    if section.start <= r.start < section.end:
                        continue
                    words = rule_words(r.rule)
                    shared = {t.rule.id: len(words & rule_words(t.rule)) for t in targets}
                    best = max(shared.values(), default=0)
                    meant = ({rid for rid, n in shared.items() if n == best} if best
                             else {t.rule.id for t in targets[:1]})
                    for t in targets:
                        if t.rule.id == r.rule.id:
                            continue
                        direct = one and t.rule.id in meant
                        out.append(EdgeCandidate(
                            r.rule.id, t.rule.id, "cross-reference", 0.9 if direct else 0.4,
                            evidence, direct, f"refers to section '{section.heading}'"))
    return out


# -- heading nesting and continuations ------------------------------------------------------
def heading_candidates(doc: SkillDoc, placed: list[_Placed]) -> list[EdgeCandidate]:
    """A sub-section refines its parent section: its rules require the parent's first rule.
    A sub-section titled as exceptions or conditions qualifies its parent instead: the
    parent's rules require the sub-section's rules (judging them needs the exceptions)."""
    out = []
    for block, parent in _with_parents(doc):
        # Under the document's title every section is "nested": that says nothing.
        if parent is not None and parent.level >= 2 and block.heading:
            owners = _inside(placed, parent.start, parent.end)
            subs = _inside(placed, block.start, block.end)
            evidence = Span(block.start, block.start + 1)
            if _NESTED_HEADING.search(block.heading):
                out.extend(EdgeCandidate(o.rule.id, c.rule.id, "heading", 0.5, evidence, False,
                                         f"'{block.heading}' qualifies '{parent.heading}'")
                           for o in owners for c in subs)
            elif owners:
                out.extend(EdgeCandidate(c.rule.id, owners[0].rule.id, "heading", 0.4, evidence, False,
                                         f"'{block.heading}' refines '{parent.heading}'")
                           for c in subs)
        elif block.heading and _NESTED_HEADING.search(block.heading):
            out.extend(_conditions_section(doc, placed, block))
    return out


def _terms(text: str) -> dict[str, str]:
    """A word's stem -> the word; five letters stand for the stem ("visits"/"visit")."""
    return {w[:5]: w for w in sorted(content_words(text)) if len(w) > 2}


def _conditions_section(doc: SkillDoc, placed: list[_Placed], block: Block) -> list[EdgeCandidate]:
    """A section of its own titled as conditions, exceptions or limits ("## Conditions" after
    the procedure) qualifies the rules elsewhere that speak of the same things: a rule sharing
    at least :data:`_SHARED_TERMS` terms with one of its rules is offered that rule (the
    fuser or an author confirms)."""
    conditions = [(c, _terms(_text(doc, c))) for c in _inside(placed, block.start, block.end)]
    evidence = Span(block.start, block.start + 1)
    return [EdgeCandidate(u.rule.id, c.rule.id, "heading", 0.4, evidence, False,
                          f"'{block.heading}' qualifies rules on "
                          f"{', '.join(sorted(c_terms[t] for t in shared))}")
            for u, u_terms in ((u, _terms(_text(doc, u))) for u in placed
                               if not block.start <= u.start < block.end)
            for c, c_terms in conditions
            if len(shared := u_terms.keys() & c_terms.keys()) >= _SHARED_TERMS]


def continuation_candidates(doc: SkillDoc, placed: list[_Placed]) -> list[EdgeCandidate]:
    """A rule opening with ``Otherwise``, ``These``, ``Even``... continues the rule before it
    (0.7, direct). Any other rule is offered its predecessor in the same section at 0.3: policies
    state the general rule first and qualify it after, but only a reader can tell."""
    out = []
    for prev, cur in zip(placed, placed[1:], strict=False):
        if prev.block != cur.block or prev.rule.id == cur.rule.id:
            continue
        at = cur.rule.spans[0].start
        m = _CONTINUES.match(_text(doc, cur))
        if m:
            out.append(EdgeCandidate(cur.rule.id, prev.rule.id, "continuation", 0.7,
                                     Span(at, at + max(1, len(m.group(0).strip()))), True,
                                     f"opens with '{m.group(1).strip()}'"))
        else:
            out.append(EdgeCandidate(cur.rule.id, prev.rule.id, "continuation", 0.3, Span(at, at + 1),
                                     False, "follows in the same section"))
    return out


def find_candidates(doc: SkillDoc, rules: Iterable[Rule]) -> list[EdgeCandidate]:
    """Every cue-based edge candidate between ``rules`` (spans into ``doc.source``), one per
    (source, target) pair: a direct cue wins over an indirect one, then the most confident."""
    placed = _place(doc, rules)
    found = [
        *procedure_candidates(doc, placed),
        *cross_reference_candidates(doc, placed),
        *definition_candidates(doc, placed),
        *heading_candidates(doc, placed),
        *continuation_candidates(doc, placed),
    ]
    best: dict[tuple[str, str], EdgeCandidate] = {}
    for c in found:
        key = (c.source, c.target)
        if c.source == c.target:
            continue
        old = best.get(key)
        if old is None or (c.direct, c.confidence) > (old.direct, old.confidence):
            best[key] = c
    return list(best.values())
