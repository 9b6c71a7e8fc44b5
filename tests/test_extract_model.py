"""End to end with the real embedded model (slow; run with ``-m model``).

Extracts the ~300-token ``fixtures/extract/refund-desk`` SKILL live. Set
``WORKBENCH_EXTRACT_ATTACH=http://127.0.0.1:PORT/v1`` to use a running ``workbench model
serve`` instead of starting the model in the test process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.extract import MemoryStepStore, extract_skill
from workbench.llm import Gateway, load_config
from workbench.skill.document import read_skill

REFUND_DESK = Path(__file__).resolve().parent.parent / "fixtures" / "extract" / "refund-desk"


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_extracts_a_small_skill():
    config = load_config(env={})
    attach = os.environ.get("WORKBENCH_EXTRACT_ATTACH")
    gateway = Gateway(config.attached_to(attach) if attach else config)
    doc = read_skill(REFUND_DESK)
    skill, report = extract_skill(doc, gateway, MemoryStepStore())
    assert report.model_calls >= 3
    assert len(skill.graph.rules) >= 4
    assert report.verbatim_span_rate is not None and report.verbatim_span_rate >= 0.5
    for rule in skill.graph.rules.values():
        assert skill.rule_text(rule.id).strip()
