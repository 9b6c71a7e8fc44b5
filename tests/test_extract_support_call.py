"""A short support policy written as a new user would: six phases and a conditions section, in
two layouts (bold "Phase n" paragraphs in one section; "### Phase n" headings). Replayed from
the embedded model's recorded answers (``record.py support-call``): every phase must reach the
phase before it through the extracted edges, the conditions must reach the one rule on their
topic, and nothing else may cross into or out of the conditions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.extract import MemoryStepStore, extract_skill
from workbench.llm import Gateway, Replayer, load_config
from workbench.skill.document import read_skill

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = 11  # every sentence of the policy states a duty or a permission


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    return Gateway(load_config(env={}),
                   recorder=Replayer(ROOT / "fixtures" / "recordings" / "extract_support_call.jsonl"))


def phase_of(source: str, at: int) -> int | None:
    """The phase of a rule ending at ``at``: its span may open with its phase's own marker
    ("**Phase 2 - Identification.** The agent must ..."). None in the conditions section."""
    if at > source.index("## Conditions"):
        return None
    marks = [int(m.group(1)) for m in re.finditer(r"Phase (\d)", source) if m.start() < at]
    return marks[-1] if marks else None


@pytest.mark.parametrize("folder", ["support-call", "support-call-headings"])
def test_each_phase_requires_the_one_before_and_the_conditions_only_their_topic(folder, gateway):
    doc = read_skill(ROOT / "fixtures" / "extract" / folder)
    skill, report = extract_skill(doc, gateway, MemoryStepStore())
    rules = skill.graph.rules
    assert len(rules) == SENTENCES and not report.span_errors
    phases: dict[int | None, set[str]] = {}
    for rid, rule in rules.items():
        phases.setdefault(phase_of(doc.source, rule.spans[-1].end), set()).add(rid)
    assert sorted(p for p in phases if p) == [1, 2, 3, 4, 5, 6] and len(phases[None]) == 2
    for n in range(2, 7):
        reached = set(skill.graph.closure(sorted(phases[n])))
        assert reached & phases[n - 1], f"phase {n} does not reach phase {n - 1}"

    def text(rid: str) -> str:
        return doc.source[rules[rid].spans[0].start:rules[rid].spans[0].end]

    booking = next(r for r in rules if "book a technician visit" in text(r))
    weekdays = next(r for r in rules if "only be booked on weekdays" in text(r))
    assert (booking, weekdays) in {e.pair for e in skill.graph.edges}
    crossing = {e.pair for e in skill.graph.edges if (e.source in phases[None]) != (e.target in phases[None])}
    assert crossing == {(booking, weekdays)}
