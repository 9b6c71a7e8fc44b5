"""Extracted graphs measured against reference graphs: hand-derived figures, CLI, demo BEFORE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.extract.evaluate import evaluate_index, evaluate_skill
from workbench.graph import Edge, PolicyIndex, Rule, RuleGraph, SkillGraph, Span

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ("Verify the member id. Check the fare class. Refunds go to the card. "
          "Never refund cash. Greet the user.")


def at(text: str) -> tuple[Span, ...]:
    start = SOURCE.index(text)
    return (Span(start, start + len(text)),)


REF = SkillGraph("s", "", SOURCE, RuleGraph(
    [Rule("V", "always", "verify the member id", "required", at("Verify the member id.")),
     Rule("F", "always", "check the fare class", "required", at("Check the fare class.")),
     Rule("C", "refund", "refund to the card", "required", at("Refunds go to the card.")),
     Rule("X", "refund", "refund cash", "prohibited", at("Never refund cash."))],
    [Edge("F", "V"), Edge("C", "F"), Edge("X", "C")],
))


def extracted(rules, edges) -> SkillGraph:
    return SkillGraph("s", "", SOURCE, RuleGraph(rules, edges))


def test_figures_by_hand():
    ext = extracted(
        [
            # exact span, same modality -> V
            Rule("e1", "always", "verify id", "required", at("Verify the member id.")),
            # quote without the full stop: same span once trimmed; modality disagrees -> F
            Rule("e2", "always", "check fare", "permitted", at("Check the fare class")),
            # quotes two reference rules at once -> matches C (best) and X
            Rule("e3", "refund", "card only", "required", at("Refunds go to the card. Never refund cash.")),
            # on no reference rule's text: a false positive
            Rule("e4", "always", "greet", "required", at("Greet the user.")),
        ],
        # e2->e1 is F->V (hit); e3->e1 maps to C->V or X->V (no reference edge); e4->e2 has an
        # unmatched end (not between matched rules).
        [Edge("e2", "e1"), Edge("e3", "e1"), Edge("e4", "e2")],
    )
    ev = evaluate_skill(ext, REF)
    # rules: 3 of 4 extracted are on reference text; V, F, C, X all covered.
    assert (ev.rule_precision, ev.rule_recall) == (0.75, 1.0)
    # e1 and e2 exact (after trimming "."), e3 spans two rules: 2/3 exact; modality e1, e3 agree.
    assert ev.span_exactness == pytest.approx(2 / 3)
    assert ev.modality_agreement == pytest.approx(2 / 3)
    # edges: 1 hit of 2 between matched; reference edges found 1 of 3 (all ends covered).
    assert (ev.edge_precision, ev.edge_recall) == (0.5, pytest.approx(1 / 3))
    assert ev.edge_f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))  # = 0.4
    assert ev.edge_precision_all == pytest.approx(1 / 3)
    assert ev.unmatched_extracted == ["e4"] and ev.unmatched_reference == []


def test_path_credit_counts_edges_a_reference_path_connects():
    # X -> V skips two reference edges (X -> C -> F -> V): wrong as an edge, right as a path.
    ext = extracted(
        [Rule("a", "refund", "no cash", "prohibited", at("Never refund cash.")),
         Rule("b", "always", "verify", "required", at("Verify the member id."))],
        [Edge("a", "b")],
    )
    plain, credited = evaluate_skill(ext, REF), evaluate_skill(ext, REF, path_credit=True)
    assert plain.edge_precision == 0.0 and credited.edge_precision == 1.0
    # Only X and V are covered, so no reference edge has both ends matched: recall is n/a.
    assert credited.edge_recall is None and credited.edge_f1 is None


def test_text_similarity_matches_when_spans_do_not():
    other = SkillGraph("s", "", "A different rendering of the policy.", RuleGraph(
        [Rule("t", "always", "verify the member id", "required", ())]))
    ev = evaluate_skill(other, REF)
    assert ev.matched_by_text == 1 and ev.rule_precision == 1.0 and ev.span_exact == 0
    assert any("sources differ" in n for n in ev.notes)


def test_cli_prints_a_table_and_writes_json(tmp_path, capsys):
    ext_path, ref_path, out = tmp_path / "e.json", tmp_path / "r.json", tmp_path / "fig.json"
    one = Rule("e1", "always", "verify", "required", at("Verify the member id."))
    PolicyIndex([extracted([one], [])]).save(ext_path)
    PolicyIndex([REF]).save(ref_path)
    assert main(["extract", "evaluate", str(ext_path), str(ref_path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rule P" in printed and "edge F1" in printed
    data = json.loads(out.read_text())
    assert data["skills"][0]["figures"]["rule_recall"] == 0.25


def test_cli_errors_name_the_problem(tmp_path, capsys):
    ref_path = tmp_path / "r.json"
    PolicyIndex([REF]).save(ref_path)
    assert main(["extract", "evaluate", str(tmp_path / "missing.json"), str(ref_path)]) == 2
    assert "cannot read the extracted index" in capsys.readouterr().err
    assert main(["extract", "evaluate", str(ref_path)]) == 2
    assert "EXTRACTED.json REFERENCE.json" in capsys.readouterr().err
    other = tmp_path / "o.json"
    PolicyIndex([SkillGraph("other", "", SOURCE, RuleGraph())]).save(other)
    assert main(["extract", "evaluate", str(other), str(ref_path)]) == 2
    assert "no SKILL" in capsys.readouterr().err


def test_demo_before_figures():
    """The embedded model's earlier extraction of the demo SKILLs (the BEFORE of issue 14)."""
    ev = evaluate_index(PolicyIndex.load(ROOT / "fixtures/demo/extracted/v1/index.embedded.json"),
                        PolicyIndex.load(ROOT / "fixtures/demo/index.json"))
    by = {s.skill: s for s in ev.skills}
    air, ret = by["airline-policy"], by["retail-policy"]
    assert (air.matched_reference, air.matched_extracted, air.edge_hits) == (48, 47, 1)
    assert (ret.matched_reference, ret.matched_extracted, ret.edge_hits) == (45, 40, 1)
    assert air.edge_f1_all < 0.05 and ret.edge_f1_all < 0.05
