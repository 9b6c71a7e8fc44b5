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
from workbench.skill.document import parse_skill

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "demo" / "extracted"


def load(folder: Path) -> tuple[PolicyIndex, dict]:
    reports = json.loads((folder / "reports.json").read_text(encoding="utf-8"))
    return PolicyIndex.load(folder / "index.embedded.json"), {r["skill"]: r for r in reports}


INDEX, REPORTS = load(OUT)
# v1/: the extraction before issue 14, recorded before rule-cap splitting, cue-based fusion
# (fuse_v2) and the non-rule filter. Replayed with the options of its time, so no request
# changes; the report must now say which answers may have lost rules at the cap (counted from
# extract_demo.jsonl: 7 of its 26 extraction answers listed as many rules as allowed).
LEGACY = {"extract_prompt": "extract_v1", "on_rule_cap": "report", "fuse_prompt": "fuse_v1", "cues": False,
          "drop_non_rules": False, "model_edges": "keep"}
V1_INDEX, V1_REPORTS = load(OUT / "v1")
# quotes/: issue 14's first pass, the quoting extractor (extract_v1: the model copies each
# rule's sentence) with the rule-cap split, cues and the non-rule filter; the default is now
# the sentence extractor (units_v1: the model judges pre-cut numbered sentences).
QUOTES = {"extract_prompt": "extract_v1"}
QUOTES_INDEX, QUOTES_REPORTS = load(OUT / "quotes")
SAVED = {"v1": (V1_INDEX, V1_REPORTS), "quotes": (QUOTES_INDEX, QUOTES_REPORTS), "now": (INDEX, REPORTS)}
CASES = ([("v1", name, LEGACY) for name in V1_INDEX.skills]
         + [("quotes", name, QUOTES) for name in QUOTES_INDEX.skills]
         + [("now", name, {}) for name in INDEX.skills])
CAP_HITS = {("v1", "airline-policy"): 5, ("v1", "retail-policy"): 2}


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    recordings = ROOT / "fixtures" / "recordings" / "extract_demo.jsonl"
    return Gateway(load_config(env={}), recorder=Replayer(recordings))


@pytest.mark.parametrize(("which", "name", "options"), CASES)
def test_demo_skill_rebuilds_from_recordings(which, name, options, gateway):
    index, reports = SAVED[which]
    saved, report = index[name], reports[name]
    doc = parse_skill(saved.source, f"{name}/SKILL.md")
    limit = report["max_block_tokens"]
    skill, rebuilt = extract_skill(doc, gateway, MemoryStepStore(), max_block_tokens=limit, **options)
    assert PolicyIndex([skill]).to_dict() == PolicyIndex([saved]).to_dict()
    assert rebuilt.figures()["rule_cap_hits"] == CAP_HITS.get((which, name), 0)
    assert rebuilt.figures()["rules"] == report["figures"]["rules"]
    assert len(rebuilt.span_errors) == len(report["span_errors"])


def test_reports_carry_the_figures():
    for name, report in REPORTS.items():
        figures = report["figures"]
        assert figures["rules"] == len(INDEX[name].graph.rules)
        assert 0 <= figures["verbatim_span_rate"] <= 1
        assert report["extractor_model"] == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
