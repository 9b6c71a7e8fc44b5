"""The extraction pipeline on a scripted model (deterministic path): resumability,
incremental re-runs, splitting, broken answers, cycles, edge-case documents.

The scripted transport stands in for the HTTP exchange only; the real Gateway parses,
schema-checks and repairs its answers, so broken answers travel the product's code path.
Behaviour with the real embedded model is covered by test_extract_recorded.py (replayed
recordings) and test_extract_model.py (live, marked ``model``).
"""

from __future__ import annotations

import functools
import json
import re

import pytest

from tests.scripted import ScriptedTransport
from tests.scripted import scripted_gateway as gateway
from workbench.extract import ExtractionProgress, JsonStepStore, MemoryStepStore
from workbench.extract import extract_skill as extract_with_options
from workbench.llm import Gateway, ModelCallError, load_config
from workbench.llm.tokens import count_tokens
from workbench.llm.transport import AttemptError, RawResponse
from workbench.skill.document import parse_skill

NORMATIVE = re.compile(r"\b(must|never|may|cannot|should|only)\b", re.I)

# These tests drive the quoting extractor (prompt extract_v1: the model copies each rule's
# sentence) with scripted answers; the default sentence extractor (units_v1) has test_extract_sentences.py.
extract_skill = functools.partial(extract_with_options, extract_prompt="extract_v1")


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [s.strip() for s in parts if NORMATIVE.search(s) and not s.lstrip().startswith("#")]


def fake_extractor(user: str) -> dict:
    """One rule per normative sentence, quoting it; each rule requires the previous one."""
    body = user.split("\n\n", 1)[1] if "\n\n" in user else user
    rules = []
    for i, s in enumerate(sentences(body)[:10], 1):
        modality = "prohibited" if re.search(r"\b(never|not|cannot)\b", s, re.I) else (
            "permitted" if re.search(r"\bmay\b", s, re.I) else "required")
        rules.append({"id": f"R{i}", "quote": s, "condition": "always", "action": s[:60].lower(),
                      "modality": modality})
    edges = [{"source": f"R{i}", "target": f"R{i - 1}"} for i in range(2, len(rules) + 1)]
    return {"rules": rules, "edges": edges}


def scripted(respond) -> ScriptedTransport:
    return ScriptedTransport(respond, output_tokens=50)


def default_respond(request) -> dict:
    name = request["response_format"]["json_schema"]["name"]
    user = request["messages"][-1]["content"]
    if name == "rules":
        return fake_extractor(user)
    return {"merges": [], "edges": []}


def extract_calls(t: ScriptedTransport) -> list[dict]:
    return [r for r in t.requests if r["response_format"]["json_schema"]["name"] == "rules"]


TEN = "---\nname: ten\ndescription: Ten sections.\n---\n" + "".join(
    f"## Topic {n}\n\nThe agent must check item {n} before acting.\n"
    f"The agent must never skip step {n} of the process.\n\n"
    for n in range(1, 11)
)


def test_graph_spans_are_verbatim_and_ids_readable():
    t = scripted(default_respond)
    skill, report = extract_skill(parse_skill(TEN), gateway(t), MemoryStepStore())
    assert len(skill.graph.rules) == 20
    for rule in skill.graph.rules.values():
        assert re.fullmatch(r"topic-\d+-R\d", rule.id)
        assert NORMATIVE.search(skill.rule_text(rule.id))
    assert skill.rule_text("topic-3-R1") == "The agent must check item 3 before acting."
    assert report.verbatim_span_rate == 1.0 and not report.span_errors
    assert report.prompt_tokens == 100 * len(t.requests)


def test_rerun_reuses_every_step_and_edit_reextracts_only_that_block(tmp_path):
    store = JsonStepStore(tmp_path / "steps")
    first = scripted(default_respond)
    skill1, _ = extract_skill(parse_skill(TEN), gateway(first), store)
    again = scripted(default_respond)
    skill2, report = extract_skill(parse_skill(TEN), gateway(again), store)
    assert again.requests == [] and report.blocks_cached == 10
    assert PolicyDict(skill1) == PolicyDict(skill2)

    edited = TEN.replace("check item 5 before", "check item 5 twice before")
    third = scripted(default_respond)
    skill3, report3 = extract_skill(parse_skill(edited), gateway(third), store)
    texts = [r["messages"][-1]["content"] for r in extract_calls(third)]
    assert len(texts) == 1 and "item 5 twice" in texts[0]
    # Other sections keep their ids (and offsets move with the edit).
    assert skill3.rule_text("topic-7-R1") == "The agent must check item 7 before acting."
    assert report3.blocks_cached == 9


def PolicyDict(skill):
    from workbench.graph import PolicyIndex

    return PolicyIndex([skill]).to_dict()


def test_crash_loses_nothing_finished(tmp_path):
    store = JsonStepStore(tmp_path / "steps")
    answered: list[dict] = []

    def answer_four_then_drop(request):  # the connection drops for good after 4 answers
        if len(answered) >= 4:
            return AttemptError("connection", "scripted outage", retryable=False)
        answered.append(request)
        return default_respond(request)

    dying = scripted(answer_four_then_drop)
    with pytest.raises(ModelCallError) as err:
        extract_skill(parse_skill(TEN), gateway(dying), store, concurrency=1)
    assert err.value.kind == "connection"
    resumed = scripted(default_respond)
    _, report = extract_skill(parse_skill(TEN), gateway(resumed), store, concurrency=1)
    assert len(extract_calls(resumed)) == 6  # the 4 answered before the crash are reused
    assert report.blocks_cached == 4


def test_truncated_answer_splits_the_block_and_keeps_all_rules():
    def respond(request):
        is_extract = request["response_format"]["json_schema"]["name"] == "rules"
        if is_extract and request["messages"][1]["content"].count("must") > 2:
            return RawResponse('{"rules": [{"id": "R1", "quote": "The', "length", 50, 2048, None, "s")
        return default_respond(request)

    doc = parse_skill("# Big\n\n" + "\n\n".join(f"The agent must do task {n} carefully." for n in range(6)))
    t = scripted(respond)
    skill, report = extract_skill(doc, gateway(t), MemoryStepStore())
    assert len(skill.graph.rules) == 6
    block = report.blocks[0]
    assert block.pieces >= 3 and not block.error
    # Rules from different pieces get distinct, continuing local numbers.
    assert sorted(skill.graph.rules) == [f"big-R{n}" for n in range(1, 7)]


def capped_respond(request):
    """An extractor that lists one rule per normative sentence but never more than the schema
    allows: an answer exactly at the rule cap, as a model with more to say would give."""
    if request["response_format"]["json_schema"]["name"] != "rules":
        return {"merges": [], "edges": []}
    cap = request["response_format"]["json_schema"]["schema"]["properties"]["rules"]["maxItems"]
    body = request["messages"][-1]["content"].split("\n\n", 1)[1]
    found = sentences(body)
    rules = [{"id": f"R{i}", "quote": s, "condition": "always", "action": s[:60].lower(),
              "modality": "required"} for i, s in enumerate(found[:cap], 1)]
    return {"rules": rules, "edges": []}


CROWDED = "# Duties\n\n" + "\n".join(f"The agent must file form {n}." for n in range(1, 13))


def test_an_answer_at_the_rule_cap_is_split_and_no_rule_is_lost():
    t = scripted(capped_respond)
    skill, report = extract_skill(parse_skill(CROWDED), gateway(t), MemoryStepStore())
    schema = extract_calls(t)[0]["response_format"]["json_schema"]["schema"]
    first_cap = schema["properties"]["rules"]["maxItems"]
    assert first_cap < 12  # the whole block cannot be answered in one capped list
    assert len(skill.graph.rules) == 12
    texts = {skill.rule_text(r) for r in skill.graph.rules}
    assert texts == {f"The agent must file form {n}." for n in range(1, 13)}
    block = report.blocks[0]
    assert block.cap_splits >= 1 and block.capped == 0
    assert report.figures()["rule_cap_splits"] == block.cap_splits


def test_an_answer_at_the_rule_cap_is_reported_when_splitting_is_off(tmp_path):
    store = JsonStepStore(tmp_path / "steps")
    t = scripted(capped_respond)
    skill, report = extract_skill(parse_skill(CROWDED), gateway(t), store, on_rule_cap="report")
    assert len(extract_calls(t)) == 1 and len(skill.graph.rules) < 12
    assert report.blocks[0].capped == 1 and report.figures()["rule_cap_hits"] == 1
    assert any("hit the cap" in p for p in report.blocks[0].problems)
    assert any("rule cap" in line for line in report.summary_lines())
    # A re-run from stored steps still says so: the warning is not lost with the cache.
    _, again = extract_skill(parse_skill(CROWDED), gateway(scripted(capped_respond)), store,
                             on_rule_cap="report")
    assert again.blocks[0].extract_cached and again.blocks[0].capped == 1
    with pytest.raises(ValueError, match="on_rule_cap"):
        extract_skill(parse_skill(CROWDED), gateway(t), store, on_rule_cap="ignore")


def test_a_piece_that_never_parses_is_reported_not_fatal():
    def respond(request):
        if "task 2" in json.dumps(request["messages"]):
            return "Sure! Here are the rules: none"  # not JSON, also after the repair
        return default_respond(request)

    doc = parse_skill("# A\n\nThe agent must do task 1.\n\n# B\n\nThe agent must do task 2.\n")
    t = scripted(respond)
    skill, report = extract_skill(doc, gateway(t), MemoryStepStore())
    assert list(skill.graph.rules) == ["a-R1"]
    assert "invalid_output" in report.blocks[1].error
    assert any("task 2" in r["messages"][-1]["content"] for r in t.requests)


def test_unknown_ids_and_cycles_from_the_model():
    def respond(request):
        if request["response_format"]["json_schema"]["name"] == "rules":
            data = fake_extractor(request["messages"][-1]["content"])
            data["edges"] += [{"source": "R1", "target": "R2"}, {"source": "R1", "target": "R9"}]
            return data
        return {"merges": [], "edges": []}

    doc = parse_skill("# A\n\nThe agent must greet. The agent must never shout.\n")
    skill, report = extract_skill(doc, gateway(scripted(respond)), MemoryStepStore(), model_edges="keep")
    edges = {(e.source, e.target) for e in skill.graph.edges}
    assert edges == {("a-R2", "a-R1"), ("a-R1", "a-R2")}  # the cycle is kept
    assert any("unknown rule id" in p for p in report.blocks[0].problems)
    # With the embedded model as fuser ("auto"), the edge no text cue supports is only proposed;
    # the one a cue supports (R2 follows R1 in its section) stays an edge.
    skill, _ = extract_skill(doc, gateway(scripted(respond)), MemoryStepStore())
    assert [e.pair for e in skill.graph.edges] == [("a-R2", "a-R1")]
    assert [(e.pair, e.provenance) for e in skill.proposed] == [(("a-R1", "a-R2"), "model")]
    with pytest.raises(ValueError, match="model_edges"):
        extract_skill(doc, gateway(scripted(respond)), MemoryStepStore(), model_edges="trust")


def test_fusion_merges_and_cross_edges_are_applied():
    def respond(request):
        if request["response_format"]["json_schema"]["name"] == "rules":
            return fake_extractor(request["messages"][-1]["content"])
        enums = request["response_format"]["json_schema"]["schema"]["properties"]["merges"]["items"]
        assert enums["properties"]["new"]["enum"] == ["N1"]
        return {"merges": [{"new": "N1", "known": "K1"}], "edges": [{"source": "K1", "target": "N1"}]}

    doc = parse_skill(
        "# A\n\nThe agent must verify the customer identity first.\n\n"
        "# B\n\nThe agent must verify the customer identity again.\n"
    )
    skill, report = extract_skill(doc, gateway(scripted(respond)), MemoryStepStore())
    assert list(skill.graph.rules) == ["a-R1"]
    # The merged rule keeps both quotes; the edge became a self-loop and was dropped.
    assert len(skill.graph.rules["a-R1"].spans) == 2 and skill.graph.edges == []
    assert report.merges == [{"rule": "b-R1", "into": "a-R1", "block": "b"}]


def test_200k_token_document_is_never_sent_whole():
    para = ("The agent must confirm the order number before any change to the order. "
            "Staff may offer a coupon once per order. ") * 4
    text = "---\nname: huge\ndescription: A very long policy.\n---\n" + "\n\n".join([para] * 2200)
    doc = parse_skill(text)
    assert count_tokens(doc.source) > 150_000
    t = scripted(lambda r: {"rules": [], "edges": []} if "rules" in json.dumps(r["response_format"])
                 else {"merges": [], "edges": []})
    _, report = extract_skill(doc, gateway(t), MemoryStepStore(), max_block_tokens=12_000,
                              context_tokens=100_000)
    sizes = [count_tokens(r["messages"][-1]["content"]) for r in t.requests]
    assert len(sizes) == len(report.blocks) >= 13
    assert max(sizes) <= 12_000 + 50  # the section label adds a few tokens
    covered = sorted((b.start, b.end) for b in report.blocks)
    assert covered[0][0] == doc.body_start and covered[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))


def test_embedded_context_caps_the_block_size():
    t = scripted(default_respond)
    doc = parse_skill("# A\n\n" + "\n\n".join(f"The agent must do step {n}." for n in range(400)))
    # 2 slots of 4,096 tokens: a 12,000-token block would not fit one request
    small = Gateway(load_config(env={"WORKBENCH_EMBEDDED_CTX_SIZE": "8192"}), transport=t,
                    sleep=lambda s: None)
    _, report = extract_skill(doc, small, MemoryStepStore())
    assert report.max_block_tokens < 4096 and len(report.blocks) > 1
    assert any("limited to" in w for w in report.warnings)


@pytest.mark.parametrize(
    "text",
    ["", "---\nname: empty\ndescription: nothing\n---\n", "---\nname: x\ndescription: d\n---\n# Title\n"],
)
def test_documents_without_rules_make_no_calls(text):
    t = scripted(default_respond)
    skill, report = extract_skill(parse_skill(text, "fixtures/empty/SKILL.md"), gateway(t), MemoryStepStore())
    assert t.requests == [] and len(skill.graph) == 0 and report.verbatim_span_rate is None


def test_no_headings_and_non_utf8(tmp_path):
    from workbench.skill.document import read_skill

    path = tmp_path / "SKILL.md"
    path.write_bytes("---\nname: cafe\ndescription: d\n---\nThe agent must greet every caf\xe9 guest.\n"
                     .encode("latin-1"))
    doc = read_skill(path)
    skill, report = extract_skill(doc, gateway(scripted(default_respond)), MemoryStepStore())
    assert list(skill.graph.rules) == ["intro-R1"]
    assert skill.rule_text("intro-R1") == "The agent must greet every caf\ufffd guest."
    assert any("not UTF-8" in w for w in report.warnings)


def test_progress_reports_every_step_in_order():
    events: list[ExtractionProgress] = []
    extract_skill(parse_skill(TEN), gateway(scripted(default_respond)), MemoryStepStore(),
                  progress=events.append)
    done = [e.done for e in events]
    assert done == sorted(done) and events[-1].phase == "done" and events[-1].fraction == 1.0
    assert {e.phase for e in events} == {"extract", "fuse", "done"} and events[-1].total == 20


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="max_blok"):
        extract_skill(parse_skill(TEN), gateway(scripted(default_respond)), max_blok=3)
