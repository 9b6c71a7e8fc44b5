"""Extraction over numbered sentences (``extract_prompt="units_v1"``): the cutting, the answer's
validation, and the pipeline on a scripted model. The recorded embedded-model run is in
test_extract_demo.py."""

from __future__ import annotations

import re

import pytest

from tests.scripted import ScriptedTransport, scripted_gateway
from workbench.extract import MemoryStepStore, extract_skill
from workbench.extract.sentences import (
    SENTENCES_PER_REQUEST,
    chunks,
    opening,
    render_sentences,
    sentences_schema,
    split_sentences,
    validate_sentences_answer,
)
from workbench.llm.transport import RawResponse
from workbench.skill.document import parse_skill

TEXT = """## Book flight

The agent must first obtain the user id. The agent should then ask for the trip type, e.g. one way.

Payment:
- Each reservation can use at most one travel certificate.
- All payment methods must already be in the
  user profile.

Checked bags:
- If the user is a gold member:
  - 2 free checked bags for each economy passenger
  - 3 free checked bags for each business passenger
- Each extra bag is 50 dollars.

```
do_not_split_code(): must not be a rule.
```
"""


def texts(text: str) -> list[str]:
    return [text[u.start:u.end] for u in split_sentences(text)]


def test_sentences_are_paragraph_sentences_and_list_items_with_their_nesting():
    sentences = split_sentences(TEXT)
    assert texts(TEXT) == [
        "The agent must first obtain the user id.",
        "The agent should then ask for the trip type, e.g. one way.",  # no cut after "e.g."
        "Payment:",  # a one-word lead-in stays: its items need it
        "Each reservation can use at most one travel certificate.",
        "All payment methods must already be in the\n  user profile.",  # continuation line
        "Checked bags:",
        "If the user is a gold member:",
        "2 free checked bags for each economy passenger",
        "3 free checked bags for each business passenger",
        "Each extra bag is 50 dollars.",
    ]  # the heading and the code fence are not sentences
    assert [u.depth for u in sentences] == [0, 0, 0, 1, 1, 0, 1, 2, 2, 1]
    assert [u.lead for u in sentences] == [False, False, True, False, False, True, True, False, False, False]


def test_a_chunk_never_ends_on_a_lead_in_and_shows_the_lead_ins_above_it():
    sentences = split_sentences(TEXT)
    runs = chunks(sentences, size=7)
    assert [i for run in runs for i in run] == list(range(len(sentences)))
    assert all(not sentences[run[-1]].lead for run in runs[:-1])
    assert runs[1][0] == 5  # "Checked bags:" moved to the run of its items
    # A run starting inside the gold-member list shows its lead-ins first, unnumbered.
    assert render_sentences(TEXT, sentences, [8, 9]).splitlines() == [
        "(context) Checked bags:",
        "  (context) If the user is a gold member:",
        "    [1] 3 free checked bags for each business passenger",
        "  [2] Each extra bag is 50 dollars.",
    ]


def test_the_answer_needs_a_verdict_for_every_number_and_quotes_the_sentence_exactly():
    sentences = split_sentences(TEXT)
    chosen = [0, 1, 2, 3]
    openings = [opening(TEXT, sentences[i]) for i in chosen]
    assert openings[:3] == ["The agent must first obtain", "The agent should then ask", "Payment:"]
    schema = sentences_schema(openings)
    assert schema["required"] == ["1", "2", "3", "4"] and schema["additionalProperties"] is False
    yes, no = schema["properties"]["2"]["anyOf"]
    assert yes["properties"]["sentence"]["enum"] == ["The agent should then ask"]
    assert no["required"] == ["sentence", "kind"]
    with pytest.raises(ValueError, match="no verdict for sentence"):
        validate_sentences_answer({"1": {"kind": "other"}}, TEXT, sentences, chosen)
    out = validate_sentences_answer({
        "1": {"sentence": openings[0], "kind": "rule", "condition": "booking", "action": "obtain the user id",
              "modality": "required"},
        "2": {"sentence": openings[1], "kind": "rule", "condition": "booking", "action": "ask the trip type",
              "modality": "sometimes"},
        # A server that does not enforce the schema: the verdict under 3 is about sentence 4.
        "3": {"sentence": openings[3], "kind": "rule", "condition": "paying", "action": "one certificate",
              "modality": "required"},
        "4": {"sentence": "Something never shown", "kind": "rule", "condition": "c", "action": "a",
              "modality": "required"},
    }, TEXT, sentences, chosen)
    assert [(r.quote, r.piece) for r in out.rules] == [
        ("The agent must first obtain the user id.", 0),
        ("Each reservation can use at most one travel certificate.", 3),
    ]
    assert len(out.problems) == 2 and "sentence 2" in out.problems[0] and "not shown" in out.problems[1]
    assert out.pieces[4] == (sentences[4].start, sentences[4].end)


def respond_sentences(request) -> dict:
    """A scripted extractor: every numbered sentence with a normative word is a rule."""
    name = request["response_format"]["json_schema"]["name"]
    if name != "rules":
        return {"merges": [], "edges": []}
    numbered = re.findall(r"^\s*\[(\d+)\] (.*)$", request["messages"][-1]["content"], re.M)
    verdicts = request["response_format"]["json_schema"]["schema"]["properties"]
    out = {}
    for n, line in numbered:
        words = verdicts[n]["anyOf"][0]["properties"]["sentence"]["enum"][0]
        assert line.startswith(words)  # the anchor is the sentence shown under that number
        out[n] = ({"sentence": words, "kind": "rule", "condition": "always", "action": line[:40],
                   "modality": "required"} if re.search(r"\b(must|should|can|free|is)\b", line)
                  else {"sentence": words, "kind": "other"})
    return out


def scripted(respond) -> ScriptedTransport:
    return ScriptedTransport(respond, output_tokens=40)


def run(transport, text=TEXT, **options):
    doc = parse_skill(f"---\nname: booking\ndescription: booking rules\n---\n{text}")
    gw = scripted_gateway(transport)
    return doc, *extract_skill(doc, gw, MemoryStepStore(), extract_prompt="units_v1", **options)


def test_the_sentence_extractor_gives_every_rule_its_sentence_as_an_exact_span():
    transport = scripted(respond_sentences)
    doc, skill, report = run(transport)
    quoted = {doc.source[r.spans[0].start:r.spans[0].end] for r in skill.graph.rules.values()}
    assert "Each extra bag is 50 dollars." in quoted
    assert "3 free checked bags for each business passenger" in quoted  # kept: under a condition
    assert "Payment:" not in quoted  # a lead-in is not a rule (taken out as a non-rule)
    assert not report.span_errors
    assert all(len(r.spans) == 1 for r in skill.graph.rules.values())
    asked = [r for r in transport.requests if r["response_format"]["json_schema"]["name"] == "rules"]
    assert len(asked) == 1 and len(split_sentences(TEXT)) <= SENTENCES_PER_REQUEST


def test_a_chunk_the_model_cannot_answer_is_asked_again_in_halves():
    calls = []

    def respond(request):
        if request["response_format"]["json_schema"]["name"] != "rules":
            return {"merges": [], "edges": []}
        shown = len(re.findall(r"^\s*\[\d+\]", request["messages"][-1]["content"], re.M))
        calls.append(shown)
        if shown > 5:
            return RawResponse('{"1": {"rule": "ye', "length", 100, 2048, None, "s")  # cut off
        return respond_sentences(request)

    doc, skill, report = run(scripted(respond))
    assert calls[0] == 10 and calls[-2:] == [5, 5]  # halved after the cut-off answer(s)
    assert len(skill.graph.rules) >= 6
    assert not any(b.error for b in report.blocks)


def test_a_sentence_extractor_rerun_after_a_one_section_edit_asks_only_that_section_and_keeps_rejections():
    from workbench.extract.provenance import EdgeDecisions

    text = TEXT + ("\n## Refunds\n\nRefunds must go to the original card. "
                   "A refund over 200 dollars needs a supervisor.\n")
    doc = parse_skill(f"---\nname: booking\ndescription: booking rules\n---\n{text}")
    store = MemoryStepStore()
    first_t = scripted(respond_sentences)
    gw = scripted_gateway(first_t)
    first, _ = extract_skill(doc, gw, store, extract_prompt="units_v1")
    rejected = first.proposed[0].pair
    decisions = EdgeDecisions()
    decisions.decide(rejected, accept=False)
    edited = parse_skill(doc.source.replace("200 dollars", "250 dollars"))
    again_t = scripted(respond_sentences)
    gw2 = scripted_gateway(again_t)
    second, report = extract_skill(edited, gw2, store, extract_prompt="units_v1", decisions=decisions)
    asked = [r for r in again_t.requests if r["response_format"]["json_schema"]["name"] == "rules"]
    assert len(asked) == 1 and "250 dollars" in asked[0]["messages"][-1]["content"]
    assert rejected not in {e.pair for e in second.proposed} | {e.pair for e in second.graph.edges}
    assert set(second.graph.rules) == set(first.graph.rules)


def test_a_sentence_stating_a_duty_stays_a_rule_when_the_model_calls_it_other():
    text = ("At the start you have to authenticate the user by email. Product ids and item ids "
            "should not be confused. The store opens at nine.\n")
    sentences = split_sentences(text)
    chosen = [0, 1, 2]
    other = {str(n): {"sentence": opening(text, sentences[i]), "kind": "other"}
             for n, i in enumerate(chosen, 1)}
    out = validate_sentences_answer(other, text, sentences, chosen)
    # "have to" and "should not" are duties in so many words; the opening hours are not.
    assert [(r.quote, r.modality, r.provenance, r.id) for r in out.rules] == [
        ("At the start you have to authenticate the user by email.", "required", "obligation", "R1"),
        ("Product ids and item ids should not be confused.", "prohibited", "obligation", "R2"),
    ]
    assert out.rules[0].action == "At the start you have to authenticate the user by email."
    assert ["'have to'" in out.problems[0], "'should not'" in out.problems[1]] == [True, True]
    # A verdict of "rule" is the model's own, whatever the words.
    said = dict(other, **{"3": {"sentence": opening(text, sentences[2]), "kind": "rule",
                                "condition": "always", "action": "open at nine",
                                "modality": "required"}})
    assert [r.provenance for r in validate_sentences_answer(said, text, sentences, chosen).rules] == [
        "obligation", "obligation", "model"]


def test_a_rule_kept_by_its_wording_says_so_in_the_graph():
    def overlooks_duties(request) -> dict:
        answer = respond_sentences(request)
        overlooked = {"sentence": "The agent must first obtain", "kind": "other"}
        return {n: overlooked if v["sentence"] == overlooked["sentence"] else v for n, v in answer.items()}

    doc, skill, report = run(scripted(overlooks_duties))
    kept = [r for r in skill.graph.rules.values() if r.provenance == "obligation"]
    quoted = [doc.source[r.spans[0].start:r.spans[0].end] for r in kept]
    assert quoted == ["The agent must first obtain the user id."]
    assert kept[0].confidence == 0.6 and kept[0].modality == "required"
    assert all(r.provenance == "model" for r in skill.graph.rules.values() if r not in kept)
    assert any("kept as a rule" in p for b in report.blocks for p in b.problems)
