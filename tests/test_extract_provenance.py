"""Cue edges in the pipeline: direct ones added, indirect ones offered to the fuser and kept
only when it confirms them, the rest proposed; provenance on every rule and edge; an author's
decisions survive re-extraction. A scripted model stands in for the HTTP exchange only."""

from __future__ import annotations

import functools
import json
import re

from workbench.extract import MemoryStepStore
from workbench.extract import extract_skill as extract_with_options
from workbench.extract.provenance import EdgeDecisions
from workbench.graph import PolicyIndex
from workbench.llm import Gateway, load_config
from workbench.llm.transport import RawResponse
from workbench.skill.document import parse_skill

SKILL = """---
name: desk
description: A returns desk.
---

# Desk

## Definitions

- **Final sale item**: an item bought at a discount of 50% or more.

## Returns

A final sale item must never be refunded to the card.

### Exceptions

A damaged item must be replaced at once.

## Exchange procedure

1. The agent must verify the order number.
2. The agent must check the packaging.
3. The agent must create the exchange.

## Greeting

The agent must greet every caller.
"""

# These tests drive the quoting extractor (prompt extract_v1: the model copies each rule's
# sentence) with scripted answers; the default sentence extractor (units_v1) has test_extract_sentences.py.
extract_skill = functools.partial(extract_with_options, extract_prompt="extract_v1")


class Model:
    """Extractor: one rule per sentence or list item holding a quote, no edges. Fuser: confirms
    every suggested link whose line mentions ``confirm`` (set per test), merges nothing."""

    def __init__(self, confirm: str = "defined here") -> None:
        self.confirm = confirm
        self.fusion_prompts: list[str] = []

    def endpoint(self, role) -> str:
        return "scripted"

    def send(self, request, role, *, key):
        name = request["response_format"]["json_schema"]["name"]
        user = request["messages"][-1]["content"]
        if name == "rules":
            body = user.split("\n\n", 1)[1]
            quotes = [m.group(1).strip() for m in re.finditer(r"^(?:\d\. |- )?(.*\b(?:must|discount)\b.*)$",
                                                              body, re.M)]
            rules = [{"id": f"R{i}", "quote": q, "condition": q[:40].lower(), "action": q[-40:].lower(),
                      "modality": "required"} for i, q in enumerate(quotes, 1)]
            answer = {"rules": rules, "edges": []}
        else:
            self.fusion_prompts.append(user)
            suggested = user.split("SUGGESTED links:\n", 1)[1].splitlines()
            edges = [{"source": m.group(1), "target": m.group(2)} for line in suggested
                     if self.confirm in line and (m := re.match(r"(\w+) -> (\w+)", line))]
            answer = {"merges": [], "edges": edges}
        return RawResponse(json.dumps(answer), "stop", 10, 10, None, "scripted")


def run(model: Model, decisions: EdgeDecisions | None = None, store=None):
    gateway = Gateway(load_config(env={}), transport=model, sleep=lambda s: None)
    return extract_skill(parse_skill(SKILL, "desk/SKILL.md"), gateway, store or MemoryStepStore(),
                         decisions=decisions)


def rule_at(skill, text: str) -> str:
    return next(r for r in skill.graph.rules if text in skill.rule_text(r))


def test_text_cue_edges_are_direct_and_a_fuser_answer_confirms_them():
    model = Model(confirm="defined here")
    skill, report = run(model)
    verify, check, create = (rule_at(skill, t) for t in ("verify the order", "check the packaging",
                                                          "create the exchange"))
    definition, refund = rule_at(skill, "Final sale item"), rule_at(skill, "never be refunded")
    edges = {e.pair: e for e in skill.graph.edges}
    assert edges[(check, verify)].provenance == "procedure"
    assert edges[(create, check)].provenance == "procedure"
    # The returns rule shares no word with the definition's rule beyond the term, in another
    # block: the fuser was shown it as a suggestion, and its confirmation raises the confidence
    # of the direct edge.
    assert any("defined here" in p for p in model.fusion_prompts)
    confirmed = edges[(refund, definition)]
    assert confirmed.provenance == "definition" and confirmed.confidence > 0.5
    assert skill.source[confirmed.evidence.start:confirmed.evidence.end] == "Final sale item"
    assert report.cue_edges >= 2 and report.cue_confirmed >= 1
    # Every rule says where it came from.
    assert all(r.provenance == "model" and r.confidence for r in skill.graph.rules.values())
    # Provenance survives the file format.
    data = PolicyIndex([skill]).to_dict()
    again = PolicyIndex.from_dict(json.loads(json.dumps(data)))["desk"]
    def kinds(s):
        return {e.pair: e.provenance for e in s.graph.edges}

    assert kinds(again) == kinds(skill)


def test_an_unconfirmed_suggestion_is_only_proposed():
    skill, report = run(Model(confirm="nothing matches this"))
    definition, refund = rule_at(skill, "Final sale item"), rule_at(skill, "never be refunded")
    damaged = rule_at(skill, "damaged item")
    edges = {e.pair: e for e in skill.graph.edges}
    # A definition's use is direct: an edge without the fuser, at the cue's own confidence.
    assert edges[(refund, definition)].provenance == "definition"
    assert edges[(refund, definition)].confidence == 0.8
    # An exceptions sub-section qualifies its section's rule only as a proposal.
    assert (refund, damaged) not in edges
    assert skill.proposed and (refund, damaged) in {e.pair for e in skill.proposed}
    assert report.proposed_edges == len(skill.proposed)
    greet = rule_at(skill, "greet every caller")
    assert all(greet not in e.pair for e in [*skill.graph.edges, *skill.proposed])


def test_decisions_survive_re_extraction():
    store = MemoryStepStore()
    first, _ = run(Model(confirm="nothing"), store=store)
    proposal = first.proposed[0].pair
    procedure = next(e.pair for e in first.graph.edges if e.provenance == "procedure")
    decisions = EdgeDecisions()
    decisions.decide(procedure, accept=False)  # the author rejects a cue edge
    second, report = run(Model(confirm="nothing"), decisions=decisions, store=store)
    assert procedure not in {e.pair for e in second.graph.edges}
    assert procedure not in {e.pair for e in second.proposed}
    decisions.decide(proposal, accept=True)
    third, _ = run(Model(confirm="nothing"), decisions=decisions, store=store)
    accepted = {e.pair: e for e in third.graph.edges}[proposal]
    assert accepted.provenance == "author" and accepted.confidence == 1.0
    assert proposal not in {e.pair for e in third.proposed}
    assert procedure not in {e.pair for e in third.graph.edges}
    assert report.decisions_applied >= 1
