"""Each extraction step on recorded answers of the real embedded model (Qwen2.5-Coder-1.5B
Q4_K_M, through the gateway in record mode). Replay fails loudly on any unrecorded request.

Recorded with ``fixtures/extract/record.py``; re-record after changing a prompt or schema.
The assertions check what our code does with the model's answers (validation, span
location, rebasing, fusion, report), plus facts about those particular recorded answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.extract import MemoryStepStore, extract_skill, load_prompt, plan_blocks
from workbench.extract.block_extraction import EXTRACT_SCHEMA_NAME, extraction_request
from workbench.extract.rebase import rebase_block
from workbench.extract.schema import BlockExtraction, validate_extraction
from workbench.graph import MODALITIES, PolicyIndex
from workbench.llm import Gateway, MissingRecording, Replayer, load_config
from workbench.skill.document import parse_skill, read_skill

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "fixtures" / "recordings"
REFUND_DESK = ROOT / "fixtures" / "extract" / "refund-desk"


def replay(name: str) -> Gateway:
    # Replayer raises LlmConfigError when the file is missing: the test fails, never skips.
    return Gateway(load_config(env={}), recorder=Replayer(RECORDINGS / name))


@pytest.fixture(scope="module")
def desk():
    doc = read_skill(REFUND_DESK)
    skill, report = extract_skill(doc, replay("extract_refund_desk.jsonl"), MemoryStepStore())
    return doc, skill, report


def test_block_extraction_step_answers_validate_and_locate():
    doc = read_skill(REFUND_DESK)
    gateway = replay("extract_refund_desk.jsonl")
    prompt = load_prompt("extract_v1")
    role = gateway.config.role("extractor")
    located = proposed = 0
    for block in plan_blocks(doc, 12_000):
        if block.is_empty:
            continue
        messages, schema = extraction_request(prompt, block.section, block.text, role.max_tokens)
        res = gateway.complete_json("extractor", messages, schema, EXTRACT_SCHEMA_NAME,
                                    validate=validate_extraction)
        ex = validate_extraction(res.data)
        assert ex.rules, f"the recorded answer for {block.key} has no rules"
        assert all(r.modality in MODALITIES for r in ex.rules)
        rebased = rebase_block(block, BlockExtraction(ex.rules, ex.edges, pieces=[(0, len(block.text))]))
        proposed += len(ex.rules)
        located += rebased.exact + rebased.normalised
        for rule in rebased.rules:
            assert rule.id.startswith(f"{block.key}-R")
            for span in rule.spans:
                assert block.start <= span.start < span.end <= block.end
    assert located / proposed >= 0.5


def test_pipeline_builds_a_valid_traceable_graph(desk):
    doc, skill, report = desk
    data = PolicyIndex([skill]).to_dict()
    assert PolicyIndex.from_dict(json.loads(json.dumps(data))).to_dict() == data
    assert len(skill.graph.rules) >= 5
    for rule in skill.graph.rules.values():
        text = skill.rule_text(rule.id)
        assert text and all(doc.source[s.start:s.end] == skill.span_text(s) for s in rule.spans)
    # The report adds up.
    blocks = report.blocks
    assert sum(b.rules_proposed for b in blocks) == report.rules_proposed
    assert report.rules_proposed == (
        sum(b.exact_spans + b.normalised_spans for b in blocks) + len(report.span_errors))
    assert report.rules == len(skill.graph.rules) and report.edges == len(skill.graph.edges)
    assert report.extractor_model == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert report.prompt_tokens > 0 and report.tokens_per_source_token > 1


def test_fusion_step_ran_on_recorded_answers(desk):
    _, skill, report = desk
    fused = [b for b in report.blocks if b.fuse_cached is not None]
    assert fused, "no block after the first had related rules; the fusion step never ran"
    ids = set(skill.graph.rules)
    for merge in report.merges:
        assert merge["into"] in ids and merge["rule"] not in ids
    # Under fuse_v1 the recorded fuser paired new and known rules by position (N1-K1, N2-K2)
    # and the guards had to refuse four merges. Under fuse_v2 (re-recorded) it proposes no
    # merge and no edge: nothing links these sections, and the text gives no cross-section cue.
    assert report.merges == [] and report.rejected_merges == []
    assert len(skill.graph.rules) == report.rules_proposed
    assert report.cross_block_edges == len(skill.graph.edges) == 0
    # Within each section, cue candidates wait for the author's review instead.
    assert report.proposed_edges == len(skill.proposed) > 0
    assert all(e.provenance == "continuation" for e in skill.proposed)


def test_replay_of_a_changed_prompt_fails_loudly():
    doc = parse_skill(read_skill(REFUND_DESK).source.replace("200 dollars", "250 dollars"))
    with pytest.raises(MissingRecording, match="no recorded response"):
        extract_skill(doc, replay("extract_refund_desk.jsonl"), MemoryStepStore())
