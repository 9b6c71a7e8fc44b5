"""A block cut into numbered sentences and list items, and the extractor answer over them.

Asked to copy each rule's sentence "character for character", the 1.5B embedded model
invents sentences ("Bags must be checked in before departure.") and skips list items: on the
demo airline policy 13 of its rules were dropped as untraceable and whole bullet lists
(booking, baggage) were never extracted. So with prompt ``units_v1`` (the default) the text is
cut first, by rule, into *sentences* (a sentence of a paragraph, a list item, or a sentence of
a long item), shown to the model numbered, and the model only says which sentences are rules
and what they require:

    [4] Each reservation can have at most five passengers.
    answer: {..., "4": {"sentence": "Each reservation can have at", "kind": "rule",
                        "condition": "booking", "action": "...", "modality": "prohibited"}}

Every span is then exact by construction (the sentence's own text), the answer holds one
verdict per sentence shown (no cap to hit, no sentence skipped), and a sentence judged "other"
is not a rule. Long blocks are asked in chunks of at most :data:`SENTENCES_PER_REQUEST`
sentences, each chunk opening with the lead-in lines its first items hang under, so the model
sees their context.

Words (issue 49): this module was ``units.py`` and its pieces *units*. In code a *unit* is now
only the audit's: a citable id in a judge's context (``AuditTrace.units``, ``units`` in trace
files). What is cut here is called a *sentence*, as the prompt and the answer's ``sentence``
anchor already call it. The names users and stored files see are unchanged: the prompt
``units_v1`` (``--extract-prompt units_v1``, reports' ``extract_prompt``) and
``block_extraction.SENTENCES_PROMPT_NAME``'s value ``"units"``, the prompt's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from workbench.extract.schema import CLAUSE_MAX, BlockExtraction, LocalRule, _closed_object, _text
from workbench.graph import MODALITIES
from workbench.prompts.fencing import defuse

# Enough sentences for a paragraph or a list per request, few enough that a small model keeps
# every one in view and its answer stays well under 2,048 tokens (~50 tokens a verdict).
SENTENCES_PER_REQUEST = 10
MIN_SENTENCE_WORDS = 2
OPENING_WORDS = 5  # words of a sentence each verdict repeats, to stay on the right sentence

_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,3}[.)])[ \t]+")
# A sentence ends at . ! ? (after closing quotes/brackets) followed by space or a line break
# and a capital,
# a quote, an opening bracket or bold; not after a common abbreviation or a single initial.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*(?:[ \t]+|[ \t]*\n[ \t]*)(?=[A-Z\"“'(\[*])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|mr|mrs|ms|dr|st)|\b[A-Z])\.$", re.I)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Sentence:
    """``text[start:end]`` of the block: one candidate rule. ``depth`` is the list nesting
    (0 for a paragraph sentence or a top-level item); ``lead`` marks a line ending in ":"
    that introduces the items below it."""

    start: int
    end: int
    depth: int
    lead: bool = False


def _line_spans(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, pos + len(line.rstrip("\r\n"))))
        pos += len(line)
    return out


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut at sentence ends (offsets into ``text``), each stripped."""
    cuts, last = [], start
    for m in _SENTENCE_END.finditer(text, start, end):
        if _ABBREVIATION.search(text[last:m.start()]):
            continue
        cuts.append((last, m.start()))
        last = m.end()
    cuts.append((last, end))
    out = []
    for a, b in cuts:
        piece = text[a:b]
        a, b = a + len(piece) - len(piece.lstrip()), a + len(piece.rstrip())
        if a < b:
            out.append((a, b))
    return out


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of a block's text, in order. Headings, code fences, blank lines and
    sentences of fewer than :data:`MIN_SENTENCE_WORDS` words (other than a lead-in) are left
    out; a list item's continuation lines belong to the item; a paragraph or item of several
    sentences gives one each."""
    groups: list[tuple[int, int, int]] = []  # (start, end, depth) of items and paragraphs
    indents: list[int] = []
    in_fence = False
    current: list[int] | None = None  # [start, end, depth] being extended
    for a, b in _line_spans(text):
        line = text[a:b]
        if _FENCE.match(line):
            in_fence, current = not in_fence, None
            continue
        if in_fence or not line.strip() or _HEADING.match(line):
            current = None
            continue
        item = _ITEM.match(line)
        if item:
            indent = len(item.group(1).expandtabs(4))
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
            current = [a + item.end(), b, len(indents)]
            groups.append(tuple(current))
            continue
        if current is not None:  # a continuation line of the item or paragraph above
            current[1] = b
            groups[-1] = tuple(current)
            continue
        indents = []
        current = [a + len(line) - len(line.lstrip()), b, 0]
        groups.append(tuple(current))
    sentences = []
    for start, end, depth in groups:
        for a, b in _sentence_spans(text, start, end):
            lead = text[a:b].rstrip("*_ ").endswith(":")
            # A one-word lead-in ("Cabin:") stays: the items under it need it as context.
            if len(_WORD.findall(text[a:b])) < MIN_SENTENCE_WORDS and not lead:
                continue
            sentences.append(Sentence(a, b, depth, lead))
    return sentences


def chunks(sentences: list[Sentence], size: int = SENTENCES_PER_REQUEST) -> list[list[int]]:
    """Sentence indices asked together: runs of at most ``size``, preferring to start a run at a
    top-level sentence so a lead-in and its items stay together when they fit."""
    out: list[list[int]] = []
    run: list[int] = []
    for i, u in enumerate(sentences):
        if run and (len(run) >= size or (u.depth == 0 and len(run) >= size * 2 // 3)):
            # A lead-in closing a run moves to the next one, beside the items it introduces.
            carry = []
            while len(run) > 1 and sentences[run[-1]].lead:
                carry.insert(0, run.pop())
            out.append(run)
            run = carry
        run.append(i)
    if run:
        out.append(run)
    return out


def _leads_above(sentences: list[Sentence], first: int) -> list[int]:
    """The lead-in sentences a sentence hangs under (nearest first dropped to outermost first)."""
    out, depth = [], sentences[first].depth
    for i in range(first - 1, -1, -1):
        if depth == 0:
            break
        u = sentences[i]
        if u.depth < depth:
            if u.lead:
                out.append(i)
            depth = u.depth
    return out[::-1]


def render_sentences(text: str, sentences: list[Sentence], chosen: list[int]) -> str:
    """The numbered lines the model reads: the chosen sentences (numbered 1..n) indented by
    depth, after the lead-ins they hang under (shown unnumbered, for context only)."""
    context = [f"{'  ' * sentences[i].depth}(context) {_flat(text, sentences[i])}"
               for i in (_leads_above(sentences, chosen[0]) if chosen else [])]
    numbered = [f"{'  ' * sentences[i].depth}[{n}] {_flat(text, sentences[i])}"
                for n, i in enumerate(chosen, 1)]
    return "\n".join(context + numbered)


def _flat(text: str, sentence: Sentence) -> str:
    return " ".join(text[sentence.start:sentence.end].split())


def opening(text: str, sentence: Sentence, words: int = OPENING_WORDS) -> str:
    """The first words of a sentence as the model sees it (defused, as the prompt shows it): the
    anchor each verdict repeats."""
    return defuse(" ".join(_flat(text, sentence).split()[:words]))


def sentences_schema(openings: list[str]) -> dict:
    """``{"1": {...}, ..., "<n>": {...}}``: one verdict per sentence shown, every one required
    and in order, so the model cannot stop after the first few or skip one (it did both when
    asked for a free list of rule numbers). Each verdict first repeats the sentence's opening
    words (an enum of one: a grammar-enforcing server writes them for the model), then its
    ``kind``: ``"other"``, or ``"rule"`` with condition, action and modality. Without the
    anchor the 1.5B model drifted (its verdict for [2] described [4]); with a yes/no verdict
    it answered "no" to prohibitions ("Do not compensate if ...")."""
    def verdict(words: str) -> dict:
        anchor = {"sentence": {"type": "string", "enum": [words]}}
        no = _closed_object({**anchor, "kind": {"type": "string", "enum": ["other"]}})
        yes = _closed_object({
            **anchor,
            "kind": {"type": "string", "enum": ["rule"]},
            "condition": {"type": "string", "minLength": 1, "maxLength": CLAUSE_MAX},
            "action": {"type": "string", "minLength": 1, "maxLength": CLAUSE_MAX},
            "modality": {"type": "string", "enum": list(MODALITIES)},
        })
        return {"anyOf": [yes, no]}

    return _closed_object({str(n): verdict(w) for n, w in enumerate(openings, 1)})


def validate_sentences_answer(data: object, text: str, sentences: list[Sentence],
                              chosen: list[int]) -> BlockExtraction:
    """The rules of one answer over ``chosen`` sentences, each quoting its sentence's exact text
    and pointing at it as its piece (``pieces`` are all the block's sentences). Raises
    ValueError when the answer is not an object or lacks a verdict for a sentence shown. A
    verdict whose ``sentence`` names another sentence shown (a server that does not enforce the
    schema) is moved to that sentence; one naming no sentence, or a ``yes`` with a missing field
    or an unknown modality, is dropped and listed in ``problems``."""
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object with one entry per sentence number")
    missing = [str(n) for n in range(1, len(chosen) + 1) if not isinstance(data.get(str(n)), dict)]
    if missing:
        raise ValueError(f"no verdict for sentence(s) {', '.join(missing)}; give one for every number")
    by_opening = {opening(text, sentences[i]): i for i in reversed(chosen)}
    out = BlockExtraction(pieces=[(u.start, u.end) for u in sentences])
    for n, index in enumerate(chosen, 1):
        raw = data[str(n)]
        if str(raw.get("kind", "")).strip().lower() != "rule":
            kept = obligation_rule(text, sentences[index], index)
            if kept is not None:
                rule, word = kept
                out.rules.append(replace(rule, id=f"R{len(out.rules) + 1}"))
                out.problems.append(f"sentence {n}: answered 'other' but it says '{word}'; kept as a rule")
            continue
        said = " ".join(str(raw.get("sentence", "")).split())
        if said and said != opening(text, sentences[index]):
            if said not in by_opening:
                out.problems.append(f"sentence {n}: opens with words not shown ({said[:40]!r}); dropped")
                continue
            index = by_opening[said]
        condition, action = _text(raw.get("condition")), _text(raw.get("action"))
        modality = _text(raw.get("modality")).lower()
        if not condition or not action or modality not in MODALITIES:
            out.problems.append(f"sentence {n}: condition, action or modality missing or invalid; dropped")
            continue
        sentence = sentences[index]
        out.rules.append(LocalRule(f"R{len(out.rules) + 1}", text[sentence.start:sentence.end],
                                   condition, action, modality, piece=index))
    return out


# Words that make a sentence a duty whatever a model says of it. The 1.5B model called "other"
# 3 sentences of the demo SKILLs holding one ("you have to authenticate the user", "the agent
# must make sure the rules apply", "should not be confused"), all 3 rules of the hand-built
# graphs; weaker words ("can", "may", "only") also describe and are left to the model.
_PROHIBITING = ("must not", "mustn't", "should not", "shouldn't", "shall not", "never", "do not",
                "don't", "cannot", "can't", "not allowed", "prohibited", "forbidden")
_BINDING = ("must", "have to", "has to", "shall", "should", "needs? to", "(?:is|are) required to")
_PROHIBITION = re.compile(rf"\b({'|'.join(_PROHIBITING)})\b", re.I)
_OBLIGATION = re.compile(rf"\b({'|'.join(_PROHIBITING + _BINDING)})\b", re.I)


def obligation_word(sentence: str) -> str | None:
    """The words of ``sentence`` that state a prohibition or else a duty, if any."""
    m = _PROHIBITION.search(sentence) or _OBLIGATION.search(sentence)
    return m.group(1) if m else None


def obligation_rule(text: str, sentence: Sentence, index: int) -> tuple[LocalRule, str] | None:
    """A rule for a sentence that states a duty in so many words (a lead-in ending in ":" only
    introduces its items), with provenance ``obligation``, and those words: its condition and
    action are the sentence itself, since no model read them out of it."""
    flat = _flat(text, sentence)
    word = obligation_word(flat)
    if sentence.lead or word is None:
        return None
    modality = "prohibited" if _PROHIBITION.search(flat) else "required"  # "never", "do not"...
    clause = flat if len(flat) <= CLAUSE_MAX else flat[: CLAUSE_MAX - 1] + "…"
    return LocalRule("R0", text[sentence.start:sentence.end], "as the sentence states", clause,
                     modality, piece=index, provenance="obligation"), word


def merge_answers(answers: list[BlockExtraction], sentences: list[Sentence]) -> BlockExtraction:
    """One block's extraction from its chunks' answers: rules renumbered in sentence order."""
    rules = sorted((r for a in answers for r in a.rules), key=lambda r: r.piece)
    return BlockExtraction(rules=[replace(r, id=f"R{n}") for n, r in enumerate(rules, 1)],
                           problems=[p for a in answers for p in a.problems],
                           pieces=[(u.start, u.end) for u in sentences])
