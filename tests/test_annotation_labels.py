"""Annotation records: validation, blind viewing, adjudication, correctness rate, progress."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workbench.annotation import (
    CDG_INSPECTION,
    CRITERIA,
    REFERENCE_RULE,
    RULE_CORRECTNESS,
    Adjudication,
    Annotator,
    Label,
    LabelError,
    ReferenceRule,
    current_labels,
    inspection_item,
    progress,
    resolve,
    rule_correctness_rate,
    split_inspection_item,
    validate_adjudication,
    validate_annotator,
    validate_label,
    visible_labels,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def rc(item: str, annotator: str, value: str, error_type: str | None = None, *,
       minute: int = 0, source: str = "human") -> Label:
    return Label(item, RULE_CORRECTNESS, annotator, value, error_type, created_at=at(minute),
                 source=source)


ANN = Annotator("ann")
BOB = Annotator("bob")
REVIEWER = Annotator("rita", role="reviewer")


# ---- validation -----------------------------------------------------------------------


def test_valid_labels_pass_unchanged():
    label = rc("R1", "ann", "incorrect", "wrong_modality")
    assert validate_label(label) is label
    assert validate_label(rc("R1", "ann", "correct", source="model"))
    item = inspection_item("case-7", "edges_necessary")
    assert validate_label(Label(item, CDG_INSPECTION, "ann", "fail", note="R4 not needed"))


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (Label("R1", "rule_check", "ann", "correct"), "unknown task 'rule_check'; use one of"),
        (rc("R1", "ann", "right"), "value 'right' is not allowed; use one of correct, incorrect"),
        (rc("R1", "ann", "incorrect"), "needs an error type; got None, use one of not_atomic"),
        (rc("R1", "ann", "incorrect", "typo"), "needs an error type; got 'typo'"),
        (rc("R1", "ann", "correct", "duplicate"), "only allowed with rule_correctness value"),
        (rc("R1", "", "correct"), "annotator is empty"),
        (rc("R1", " ann", "correct"), "surrounding whitespace"),
        (rc("", "ann", "correct"), "item is empty"),
        (rc("R1", "ann", "correct", source="llm"), "source 'llm' is unknown; use one of human"),
        (Label("R1", RULE_CORRECTNESS, "ann", "correct", created_at=datetime(2025, 1, 1)),
         "timezone-aware"),
        (Label("R1", RULE_CORRECTNESS, "ann", "correct", note="x" * 10_001), "keep it under"),
        (Label("case-7", CDG_INSPECTION, "ann", "pass"), "must be '<case>#<criterion>'"),
        (Label("case-7#vibes", CDG_INSPECTION, "ann", "pass"), "must be '<case>#<criterion>'"),
        (Label(inspection_item("c", "skill_governs"), CDG_INSPECTION, "ann", "yes"),
         "use one of pass, fail"),
        (Label(inspection_item("c", "skill_governs"), CDG_INSPECTION, "ann", "fail",
               error_type="hallucinated"), "take no error_type"),
        (Label("refunds", REFERENCE_RULE, "ann", "not json"), "not JSON"),
        (Label("refunds", REFERENCE_RULE, "ann", '{"condition": "x"}'),
         "lacks action, modality, spans"),
    ],
)
def test_invalid_labels_say_what_is_wrong(label, message):
    with pytest.raises(LabelError, match=message.replace("(", "\\(").replace(")", "\\)")):
        validate_label(label)


def test_reference_rule_round_trip_and_checks():
    rule = ReferenceRule("a refund is issued", "refund to the original method", "required",
                         ((10, 42),))
    label = Label("refunds", REFERENCE_RULE, "ann", rule.to_value())
    assert validate_label(label) is label
    assert ReferenceRule.from_value(label.value) == rule
    with pytest.raises(LabelError, match="modality 'must' is unknown; use one of required"):
        ReferenceRule("c", "a", "must", ((0, 1),)).to_value()
    with pytest.raises(LabelError, match="no span"):
        ReferenceRule("c", "a", "required", ()).to_value()
    with pytest.raises(LabelError, match="0 <= start < end"):
        ReferenceRule("c", "a", "required", ((5, 5),)).to_value()
    with pytest.raises(LabelError, match="condition is empty"):
        ReferenceRule(" ", "a", "required", ((0, 1),)).to_value()


def test_inspection_items():
    assert inspection_item("case-7", "verdict_follows") == "case-7#verdict_follows"
    # A case key may itself contain '#': the criterion is after the last one.
    assert split_inspection_item("ds#case-7#skill_governs") == ("ds#case-7", "skill_governs")
    assert len(CRITERIA) == 4
    with pytest.raises(LabelError, match="unknown criterion"):
        inspection_item("case-7", "looks_fine")


def test_annotator_and_adjudication_validation():
    with pytest.raises(LabelError, match="role 'admin' is unknown"):
        validate_annotator(Annotator("ann", "admin"))
    adjudication = Adjudication("R1", RULE_CORRECTNESS, "rita", "correct", created_at=at(5))
    assert validate_adjudication(adjudication, REVIEWER) is adjudication
    with pytest.raises(LabelError, match="only a reviewer may adjudicate"):
        validate_adjudication(Adjudication("R1", RULE_CORRECTNESS, "ann", "correct"), ANN)
    with pytest.raises(LabelError, match="signed by 'bob'"):
        validate_adjudication(Adjudication("R1", RULE_CORRECTNESS, "bob", "correct"), REVIEWER)
    with pytest.raises(LabelError, match="needs an error type"):
        validate_adjudication(Adjudication("R1", RULE_CORRECTNESS, "rita", "incorrect"))
    value = ReferenceRule("c", "a", "required", ((0, 1),)).to_value()
    with pytest.raises(LabelError, match="not adjudicated"):
        validate_adjudication(Adjudication("refunds", REFERENCE_RULE, "rita", value))


# ---- blind annotation ------------------------------------------------------------------


LABELS = [
    rc("R1", "ann", "correct", minute=1),
    rc("R1", "judge", "incorrect", "hallucinated", minute=2, source="model"),
    rc("R2", "ann", "incorrect", "not_atomic", minute=3),
]


def test_blind_mode_hides_other_annotators_labels_before_submitting():
    # bob has not labelled R1: he sees neither ann's label nor the model's.
    assert visible_labels(LABELS, BOB, "R1") == []
    assert visible_labels(LABELS, BOB, "R2") == []


def test_blind_mode_keeps_others_hidden_after_submitting():
    """Labelling an item does not unlock the others' labels of it (the Annotate pages' rule:
    an annotator sees only their own labels; the reviewer adjudicates disagreements). The
    old rule showed everyone's labels once the viewer had submitted one: an annotator could
    label, look, and relabel to agree."""
    submitted = [*LABELS, rc("R1", "bob", "correct", minute=4)]
    assert [lab.annotator for lab in visible_labels(submitted, BOB, "R1")] == ["bob"]
    assert [lab.annotator for lab in visible_labels(submitted, ANN, "R1")] == ["ann"]
    # a relabel stays one's own: both of bob's records, nobody else's
    relabelled = [*submitted, rc("R1", "bob", "incorrect", "hallucinated", minute=5)]
    assert [lab.value for lab in visible_labels(relabelled, BOB, "R1")] == [
        "correct", "incorrect"]
    assert visible_labels(submitted, BOB, "R2") == []


def test_blind_mode_shows_own_labels_and_reviewer_sees_all():
    ann_only = visible_labels(LABELS, ANN, "R2")
    assert [lab.annotator for lab in ann_only] == ["ann"]
    assert len(visible_labels(LABELS, REVIEWER, "R1")) == 2
    # A label of another task on the same item key does not unlock this task's labels.
    other_task = Label(inspection_item("R1", "skill_governs"), CDG_INSPECTION, "bob", "pass")
    assert visible_labels([*LABELS, other_task], BOB, "R1", task=RULE_CORRECTNESS) == []


# ---- adjudication ----------------------------------------------------------------------


def test_resolve_unanimous_disputed_and_adjudicated():
    labels = [
        rc("R1", "ann", "correct"), rc("R1", "bob", "correct"),
        rc("R2", "ann", "incorrect", "duplicate"), rc("R2", "bob", "correct"),
        rc("R3", "ann", "incorrect", "wrong_action"), rc("R3", "bob", "incorrect", "not_atomic"),
        rc("R4", "ann", "correct"), rc("R4", "bob", "correct"),
    ]
    adjudications = [
        Adjudication("R2", RULE_CORRECTNESS, "rita", "incorrect", "duplicate", created_at=at(9)),
        # A reviewer may overrule even a unanimous item.
        Adjudication("R4", RULE_CORRECTNESS, "rita", "incorrect", "hallucinated",
                     created_at=at(9)),
    ]
    result = resolve(labels + [rc("R5", "ann", "correct")], adjudications)
    assert (result["R1"].status, result["R1"].value) == ("unanimous", "correct")
    assert result["R1"].annotators == ("ann", "bob")
    assert (result["R2"].status, result["R2"].value, result["R2"].reviewer) == (
        "adjudicated", "incorrect", "rita")
    # Same value, different error types: unanimous on the value, no shared error type.
    assert (result["R3"].status, result["R3"].value, result["R3"].error_type) == (
        "unanimous", "incorrect", None)
    assert (result["R4"].value, result["R4"].error_type) == ("incorrect", "hallucinated")
    # One annotator is not agreement: unresolved under the default min_annotators=2.
    assert (result["R5"].status, result["R5"].value) == ("unresolved", None)
    assert resolve([rc("R5", "ann", "correct")], min_annotators=1)["R5"].status == "unanimous"


def test_resolve_uses_each_annotators_latest_label_and_latest_adjudication():
    labels = [
        rc("R1", "ann", "incorrect", "wrong_condition", minute=1),
        rc("R1", "bob", "correct", minute=2),
        rc("R1", "ann", "correct", minute=3),  # ann changed her mind
    ]
    assert resolve(labels)["R1"].status == "unanimous"
    assert [lab.value for lab in current_labels(labels)] == ["correct", "correct"]
    adjudications = [
        Adjudication("R1", RULE_CORRECTNESS, "rita", "incorrect", "duplicate", created_at=at(8)),
        Adjudication("R1", RULE_CORRECTNESS, "rita", "correct", created_at=at(9)),
    ]
    assert resolve(labels, list(reversed(adjudications)))["R1"].value == "correct"


def test_model_labels_do_not_vote_by_default():
    labels = [rc("R1", "ann", "correct"), rc("R1", "judge", "incorrect", "hallucinated",
                                              source="model")]
    assert resolve(labels)["R1"].status == "unresolved"  # only one human
    both = resolve(labels, sources=("human", "model"))
    assert both["R1"].status == "unresolved"  # two voters who disagree


def test_resolve_refuses_mixed_tasks_and_inventories():
    mixed = [rc("R1", "ann", "correct"),
             Label(inspection_item("c", "skill_governs"), CDG_INSPECTION, "ann", "pass")]
    with pytest.raises(ValueError, match="one task at a time"):
        resolve(mixed)
    value = ReferenceRule("c", "a", "required", ((0, 1),)).to_value()
    with pytest.raises(ValueError, match="inventory"):
        resolve([Label("refunds", REFERENCE_RULE, "ann", value)])


def test_retraction_values_are_valid_labels_and_name_their_rule():
    from workbench.annotation.labels import Label, retracted_rule, retraction_value, validate_label

    rule = ReferenceRule("an order is cancelled", "refund it", "required", ((3, 9),))
    value = retraction_value(rule)
    assert retracted_rule(value) == rule and retracted_rule(rule.to_value()) is None
    validate_label(Label("ref:x", "reference_rule", "ann", value))
    with pytest.raises(LabelError, match="modality"):
        validate_label(Label("ref:x", "reference_rule", "ann", value.replace("required", "maybe")))


def test_reference_rules_are_all_kept_as_an_inventory():
    first = ReferenceRule("c1", "a1", "required", ((0, 1),)).to_value()
    second = ReferenceRule("c2", "a2", "prohibited", ((2, 3),)).to_value()
    labels = [Label("refunds", REFERENCE_RULE, "ann", first, created_at=at(1)),
              Label("refunds", REFERENCE_RULE, "ann", second, created_at=at(2))]
    assert len(current_labels(labels)) == 2


# ---- rule correctness and progress ----------------------------------------------------


def test_rule_correctness_rate_after_adjudication():
    labels = [
        rc("R1", "ann", "correct"), rc("R1", "bob", "correct"),
        rc("R2", "ann", "correct"), rc("R2", "bob", "incorrect", "not_atomic"),
        rc("R3", "ann", "incorrect", "hallucinated"), rc("R3", "bob", "incorrect", "hallucinated"),
        rc("R4", "ann", "correct"), rc("R4", "bob", "incorrect", "wrong_action"),
        rc("OTHER", "ann", "correct"), rc("OTHER", "bob", "correct"),
    ]
    adjudications = [Adjudication("R2", RULE_CORRECTNESS, "rita", "correct")]
    rate = rule_correctness_rate(labels, adjudications, items=["R1", "R2", "R3", "R4", "R5"])
    # R1 unanimous correct, R2 adjudicated correct, R3 unanimous incorrect (hallucinated),
    # R4 disputed, R5 never labelled -> correct 2, incorrect 1, unresolved 2; rate = 2/3.
    # OTHER is outside the pooled inventory and ignored.
    assert (rate.correct, rate.incorrect, rate.unresolved) == (2, 1, 2)
    assert rate.rate == pytest.approx(2 / 3)
    assert rate.error_types == {"hallucinated": 1}
    assert rate.total == 5
    nothing = rule_correctness_rate([], items=["R1"])
    assert (nothing.rate, nothing.unresolved) == (None, 1)


def test_progress_per_annotator():
    labels = [
        rc("R1", "ann", "correct", minute=1), rc("R1", "ann", "correct", minute=2),  # relabel
        rc("R2", "ann", "correct"), rc("R1", "bob", "correct"),
        rc("R9", "bob", "correct"),  # not in this queue
        rc("R3", "judge", "correct", source="model"),
    ]
    result = progress(labels, ["R1", "R2", "R3", "R4"], RULE_CORRECTNESS)
    assert {name: (p.done, p.total) for name, p in result.items()} == {
        "ann": (2, 4), "bob": (1, 4)}
    assert result["ann"].fraction == 0.5
    roster = progress(labels, ["R1", "R2"], RULE_CORRECTNESS, annotators=["cat", "ann"])
    assert list(roster) == ["cat", "ann"]
    assert (roster["cat"].done, roster["ann"].done) == (0, 2)
