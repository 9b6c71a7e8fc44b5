"""The demo index extracted by the embedded model rebuilds exactly from its recordings.

``fixtures/demo/extracted/index.embedded.json`` and ``reports.json`` were made by
``fixtures/extract/record.py demo`` with the embedded model; every exchange is in
``fixtures/recordings/extract_demo.jsonl``. Each SKILL is rebuilt from the source stored in
the index (not from the SKILL files, which may have been edited since), so this checks that
the pipeline is deterministic given the model's answers. Missing recordings fail loudly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.extract import MemoryStepStore, extract_skill
from workbench.graph import PolicyIndex
from workbench.llm import Gateway, Replayer, load_config
from workbench.skill import parse_skill

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "demo" / "extracted"
INDEX = PolicyIndex.load(OUT / "index.embedded.json")
REPORTS = {r["skill"]: r for r in json.loads((OUT / "reports.json").read_text(encoding="utf-8"))}


# These recordings predate rule-cap splitting and cue-based fusion (fuse_v2): replay them with
# the options of their time, so no request changes.
LEGACY = {"on_rule_cap": "report", "fuse_prompt": "fuse_v1", "cues": False, "drop_non_rules": False}
# Extraction answers in the recordings that list exactly as many rules as the schema allowed
# (counted from extract_demo.jsonl: 7 of its 26 extraction answers).
CAP_HITS = {"airline-policy": 5, "retail-policy": 2}


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    recordings = ROOT / "fixtures" / "recordings" / "extract_demo.jsonl"
    return Gateway(load_config(env={}), recorder=Replayer(recordings))


@pytest.mark.parametrize("name", list(INDEX.skills))
def test_demo_skill_rebuilds_from_recordings(name, gateway):
    saved = INDEX[name]
    report = REPORTS[name]
    doc = parse_skill(saved.source, f"{name}/SKILL.md")
    limit = report["max_block_tokens"]
    # Recorded before answers at the rule cap were split: replaying them in "report" mode asks
    # nothing new, and the report must now say which answers may have lost rules.
    skill, rebuilt = extract_skill(doc, gateway, MemoryStepStore(), max_block_tokens=limit,
                                   **LEGACY)
    assert PolicyIndex([skill]).to_dict() == PolicyIndex([saved]).to_dict()
    assert rebuilt.figures()["rule_cap_hits"] == CAP_HITS[name]
    assert rebuilt.figures()["rules"] == report["figures"]["rules"]
    assert len(rebuilt.span_errors) == len(report["span_errors"])


def test_reports_carry_the_figures():
    for name, report in REPORTS.items():
        figures = report["figures"]
        assert figures["rules"] == len(INDEX[name].graph.rules)
        assert 0 <= figures["verbatim_span_rate"] <= 1
        assert report["extractor_model"] == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
