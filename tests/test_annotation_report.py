"""The dataset report (first paper, Table 10), agreement per task, judge-vs-human and the exports,
checked against hand-computed values."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from workbench.annotation.items import reference_item, rule_item
from workbench.annotation.labels import (
    CDG_INSPECTION,
    REFERENCE_RULE,
    RULE_CORRECTNESS,
    Adjudication,
    Label,
    ReferenceRule,
    inspection_item,
)
from workbench.annotation.report import (
    TABLE_COLUMNS,
    annotator_progress,
    dataset_report,
    judge_human_agreement,
    label_rows,
    queue_status,
    reference_inventory,
    similarity_by_name,
    task_agreement,
    to_csv,
    to_jsonl,
)
from workbench.graph import PolicyIndex, SkillGraph

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def exact_similarity(left, right) -> np.ndarray:
    """1 for identical rule text, else 0: makes the matching hand-checkable."""
    return np.array([[1.0 if a == b else 0.0 for b in right] for a in left]).reshape(len(left), len(right))


@pytest.fixture
def skills(refund_index_data) -> list[SkillGraph]:
    first = PolicyIndex.from_dict(refund_index_data)["refunds"]
    second = SkillGraph("refunds-copy", first.description, first.source, first.graph)
    return [first, second]


def ref(skill: SkillGraph, annotator: str, condition: str, action: str, modality: str,
        minute: int = 0) -> Label:
    value = ReferenceRule(condition, action, modality, ((0, 5),)).to_value()
    return Label(reference_item(skill), REFERENCE_RULE, annotator, value, created_at=at(minute))


def rc(skill: SkillGraph, rule_id: str, annotator: str, value: str, error: str | None = None,
       minute: int = 0, source: str = "human") -> Label:
    return Label(rule_item(skill, rule_id), RULE_CORRECTNESS, annotator, value, error,
                 created_at=at(minute), source=source)


@pytest.fixture
def records(skills):
    s = skills[0]
    rules = s.graph.rules
    labels = [
        # Reference rules of "ann" for the first SKILL: copies of R1 and R4, one unrelated.
        ref(s, "ann", rules["R1"].condition, rules["R1"].action, "required"),
        ref(s, "ann", rules["R4"].condition, rules["R4"].action, "prohibited"),
        ref(s, "ann", "a customer is rude", "stay polite", "required"),
        # Rule correctness by a and b:
        #   R1 c/c (unanimous correct), R2 i/i wrong_action (unanimous incorrect),
        #   R3 c/i (adjudicated correct below), R4 a only (unresolved with 2 annotators).
        rc(s, "R1", "a", "correct"), rc(s, "R1", "b", "correct"),
        rc(s, "R2", "a", "incorrect", "wrong_action"), rc(s, "R2", "b", "incorrect", "wrong_action"),
        rc(s, "R3", "a", "correct"), rc(s, "R3", "b", "incorrect", "hallucinated"),
        rc(s, "R4", "a", "incorrect", "duplicate", minute=0), rc(s, "R4", "a", "correct", minute=5),
        # A judge's labels: they never vote.
        *[rc(s, r, "judge", "correct", source="model") for r in ("R1", "R2", "R3", "R4")],
    ]
    adjudications = [Adjudication(rule_item(s, "R3"), RULE_CORRECTNESS, "rita", "correct")]
    return labels, adjudications


def test_table_10_rows_per_skill_and_pooled(skills, records):
    labels, adjudications = records
    report = dataset_report(skills, labels, adjudications, similarity=exact_similarity,
                            similarity_name="exact", threshold=0.5)
    first, second = report.rows
    # 4 extracted, 3 reference, 2 matched (R1, R4): P = 2/4, R = 2/3,
    # F1 = 2 * 1/2 * 2/3 / (1/2 + 2/3) = (2/3) / (7/6) = 4/7.
    assert (first.n_extracted, first.n_reference, first.matched) == (4, 3, 2)
    assert first.precision == pytest.approx(0.5)
    assert first.recall == pytest.approx(2 / 3)
    assert first.f1 == pytest.approx(4 / 7)
    # Correct R1, R3 (adjudicated); incorrect R2; unresolved R4 -> 2 / 3.
    assert (first.correct, first.incorrect, first.unresolved) == (2, 1, 1)
    assert first.rule_correctness == pytest.approx(2 / 3)
    assert first.reference_annotators == ("ann",)
    # The copy has no references and no labels: nothing to compare, all unresolved.
    assert (second.n_reference, second.precision, second.recall, second.f1) == (0, None, None, None)
    assert (second.unresolved, second.rule_correctness) == (4, None)
    # Pooled: counts summed; P/R/F1 over SKILLs with references only (2/4, not 2/8).
    pooled = report.pooled
    assert (pooled.skill, pooled.n_extracted, pooled.n_reference, pooled.matched) == ("pooled", 8, 3, 2)
    assert pooled.precision == pytest.approx(0.5) and pooled.f1 == pytest.approx(4 / 7)
    assert (pooled.correct, pooled.incorrect, pooled.unresolved) == (2, 1, 5)
    assert pooled.rule_correctness == pytest.approx(2 / 3)
    assert [(p.extracted_rule, p.similarity, p.confirmed) for p in report.pairs] == [
        ("R1", 1.0, None), ("R4", 1.0, None)]
    assert report.pairs[1].reference == (
        "When a refund is issued: prohibited refund to a different payment method")
    table = report.table()
    assert [row["skill"] for row in table] == ["refunds", "refunds-copy", "pooled"]
    assert list(table[0]) == list(TABLE_COLUMNS)
    assert report.settings["similarity"] == "exact"


def test_a_rejecting_judge_unmatches_pairs_but_keeps_them_for_review(skills, records):
    labels, adjudications = records
    asked = []

    def confirm(extracted: str, reference: str) -> bool:
        asked.append(extracted)
        return "payment method" not in extracted  # rejects the R4 pair

    report = dataset_report(skills[:1], labels, adjudications, similarity=exact_similarity,
                            confirm=confirm)
    row = report.rows[0]
    # 1 matched: P = 1/4, R = 1/3, F1 = 2 * 1/12 / (7/12) = 2/7.
    assert (row.matched, row.precision, row.recall) == (1, 0.25, pytest.approx(1 / 3))
    assert row.f1 == pytest.approx(2 / 7)
    assert [p.confirmed for p in report.pairs] == [True, False]
    assert len(asked) == 2 and report.settings["confirmed_by"] == "judge"


def test_reference_inventory_of_chosen_annotators(skills, records):
    labels, _ = records
    s = skills[0]
    extra = ref(s, "bob", "x", "y", "permitted")
    broken = Label(reference_item(s), REFERENCE_RULE, "bob", ReferenceRule("x", "y", "permitted",
                   ((0, 1),)).to_value().replace('"x"', '""'))  # stored before validation existed
    everyone = reference_inventory([*labels, extra, broken], s)
    assert [e.annotator for e in everyone] == ["ann", "ann", "ann", "bob"]
    assert [e.annotator for e in reference_inventory([*labels, extra], s, ["bob"])] == ["bob"]
    # A SKILL of another name has its own inventory, even over the same source text.
    assert reference_inventory(labels, skills[1]) == []
    assert reference_item(skills[1]) != reference_item(s)


def test_a_retraction_withdraws_its_authors_latest_copy_only(skills):
    from workbench.annotation.labels import retraction_value
    from workbench.annotation.report import annotator_progress

    s = skills[0]
    key = reference_item(s)
    rule = ReferenceRule("x", "y", "permitted", ((0, 5),))
    twice = [ref(s, "ann", "x", "y", "permitted", 0), ref(s, "ann", "x", "y", "permitted", 1),
             ref(s, "bob", "x", "y", "permitted", 2), ref(s, "ann", "p", "q", "required", 3)]
    take_back = Label(key, REFERENCE_RULE, "ann", retraction_value(rule), created_at=at(4))
    entries = reference_inventory([*twice, take_back], s)
    assert [(e.annotator, e.rule.condition) for e in entries] == [("ann", "x"), ("bob", "x"), ("ann", "p")]
    # retracting a rule one never wrote changes nothing; the progress count follows the inventory
    never_written = ReferenceRule("z", "z", "required", ((0, 1),))
    stray = Label(key, REFERENCE_RULE, "bob", retraction_value(never_written))
    assert len(reference_inventory([*twice, take_back, stray], s)) == 3
    rows = annotator_progress([*twice, take_back], [], ["ann", "bob"], key)
    assert [r["reference rules"] for r in rows] == [2, 1]


def test_agreement_per_task_type(skills, records):
    labels, _ = records
    s = skills[0]
    inspections = [
        Label(inspection_item("c1", "skill_governs"), CDG_INSPECTION, "a", "pass"),
        Label(inspection_item("c1", "skill_governs"), CDG_INSPECTION, "b", "pass"),
        Label(inspection_item("c1", "verdict_follows"), CDG_INSPECTION, "a", "fail"),
        Label(inspection_item("c1", "verdict_follows"), CDG_INSPECTION, "b", "fail"),
    ]
    stats = task_agreement([*labels, *inspections, rc(s, "R1", "judge2", "incorrect",
                                                      "duplicate", source="model")])
    rcs = stats["rule_correctness"]
    # Shared items R1-R3 (R4 has a's label only; a's latest R4 label counts).
    # p_o = 2/3; a: correct 2, incorrect 1; b: correct 1, incorrect 2 -> p_e = 4/9;
    # kappa = (2/3 - 4/9) / (1 - 4/9) = (2/9) / (5/9) = 0.4. Models are not annotators.
    assert rcs["cohen_kappa"] == pytest.approx(0.4)
    assert (rcs["n_items"], rcs["n_annotators"], rcs["n_labels"]) == (4, 2, 7)
    # With error types: R3 is correct vs hallucinated. a: correct 2, wrong_action 1;
    # b: correct 1, wrong_action 1, hallucinated 1 -> p_e = 2/3*1/3 + 1/3*1/3 = 1/3;
    # kappa = (2/3 - 1/3) / (2/3) = 0.5.
    assert stats["rule_correctness_error_type"]["cohen_kappa"] == pytest.approx(0.5)
    # Inspection: both agree on both criteria, two categories -> kappa 1.
    assert stats["cdg_inspection"]["cohen_kappa"] == pytest.approx(1.0)


def test_judge_versus_human_on_reviewed_items(skills, records):
    labels, adjudications = records
    result = judge_human_agreement(labels, adjudications, RULE_CORRECTNESS)
    # Reviewed: R1 correct, R2 incorrect, R3 correct (adjudicated); R4 is unresolved.
    # The judge says correct for all three: 2 agree. human c 2/3, i 1/3; judge c 1 ->
    # p_e = 2/3, p_o = 2/3 -> kappa = 0.
    assert result == {"judge": {"n_items": 3, "agree": 2,
                                "percent_agreement": pytest.approx(2 / 3),
                                "cohen_kappa": pytest.approx(0.0)}}
    assert judge_human_agreement(labels, adjudications, CDG_INSPECTION) == {}


def test_progress_and_queue_status(skills, records):
    labels, adjudications = records
    s = skills[0]
    queue = [rule_item(s, r) for r in ("R1", "R2", "R3", "R4")]
    rows = annotator_progress(labels, queue, ["a", "b", "ann", "zoe"], reference_item(s))
    by_name = {row["annotator"]: row for row in rows}
    assert by_name["a"]["rules labelled"] == 4 and by_name["b"]["rules labelled"] == 3
    assert by_name["b"]["done %"] == 75.0
    assert by_name["ann"]["reference rules"] == 3 and by_name["zoe"]["rules labelled"] == 0
    assert queue_status(labels, adjudications, RULE_CORRECTNESS, queue) == {
        "unanimous": 2, "adjudicated": 1, "unresolved": 1}


def test_exports_round_trip_and_defuse_formulas(skills, records):
    labels, adjudications = records
    report = dataset_report(skills, labels, adjudications, similarity=exact_similarity)
    table = report.table()
    lines = to_jsonl(table).splitlines()
    assert [json.loads(line)["skill"] for line in lines] == ["refunds", "refunds-copy", "pooled"]
    parsed = list(csv.DictReader(io.StringIO(to_csv(table, TABLE_COLUMNS))))
    assert parsed[2]["matched"] == "2" and parsed[1]["precision"] == ""
    assert float(parsed[0]["f1"]) == pytest.approx(4 / 7)
    hostile = to_csv([{"note": '=HYPERLINK("x")', "plain": "fine", "number": -1.5}])
    assert list(csv.reader(io.StringIO(hostile)))[1] == ["'=HYPERLINK(\"x\")", "fine", "-1.5"]


def test_label_rows_current_only_feed_the_agreement_cli(skills, records, tmp_path, capsys):
    labels, adjudications = records
    all_rows = label_rows(labels, adjudications)
    assert len(all_rows) == len(labels) + 1 and all_rows[-1]["kind"] == "adjudication"
    current = label_rows([lab for lab in labels if lab.task == RULE_CORRECTNESS and
                          lab.source == "human"], current_only=True)
    r4 = [row for row in current if row["item"].startswith("refunds/R4@")]
    assert [row["label"] for row in r4] == ["correct"]  # the later of a's two R4 labels
    path = tmp_path / "labels.csv"
    path.write_text(to_csv(current))
    from workbench.cli import main

    assert main(["annotate", "agreement", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cohen_kappa"] == pytest.approx(0.4)


def test_similarity_by_name():
    assert similarity_by_name("jaccard")(["refund money"], ["refund money"])[0, 0] == 1.0
    with pytest.raises(ValueError, match="unknown similarity 'bm25'"):
        similarity_by_name("bm25")


def test_pooled_row_matches_the_pooled_inventories_as_in_the_paper(skills, records):
    # The annotator wrote R2 twice under the second SKILL, which holds one R2 of its own.
    labels, adjudications = records
    first, second = skills
    r = first.graph.rules
    labels = [*labels,
              ref(second, "ann", r["R2"].condition, r["R2"].action, "required"),
              ref(second, "ann", r["R2"].condition, r["R2"].action, "required", minute=1)]
    per_skill = dataset_report(skills, labels, adjudications, similarity=exact_similarity,
                               pooling="per_skill")
    pooled = dataset_report(skills, labels, adjudications, similarity=exact_similarity)
    assert pooled.settings["pooling"] == "inventories"
    assert per_skill.rows == pooled.rows  # per-SKILL rows do not depend on pooling
    # Per SKILL: first matches R1, R4 (2 of its 3 refs); second matches its one R2 to one of
    # the two copies (1). Summed: 3 matched, 8 extracted, 5 references.
    assert (per_skill.pooled.matched, per_skill.pooled.n_reference) == (3, 5)
    # Pooled inventories: the second R2 copy also meets the first SKILL's R2 (same text):
    # R1, R4, R2 (first), R2 (second) = 4 matched; P = 4/8, R = 4/5, F1 = 0.8 / 1.3.
    assert pooled.pooled.matched == 4
    assert pooled.pooled.precision == pytest.approx(0.5)
    assert pooled.pooled.recall == pytest.approx(0.8)
    assert pooled.pooled.f1 == pytest.approx(2 * 0.5 * 0.8 / 1.3)
    with pytest.raises(ValueError, match="unknown pooling 'mean'"):
        dataset_report(skills, labels, adjudications, pooling="mean")
