"""Agreement for people (issue #35 item 8): two decimals and a band in words, and the
blindness rule for the figures themselves."""

from __future__ import annotations

import pytest

from tests.test_page_annotate import db, skill  # noqa: F401  (fixtures)
from workbench.annotation.labels import RULE_CORRECTNESS, Adjudication, Annotator, Label
from workbench.annotation.resolution import agreement_access
from workbench.identity.roles import COMMAND_LINE
from workbench.words import agreement_text, agreement_word, help_for, plural


@pytest.mark.parametrize("value, word", [
    (-0.2, "poor"), (0.0, "slight"), (0.1666, "slight"), (0.204, "slight"), (0.21, "fair"),
    (0.40, "fair"), (0.41, "moderate"), (0.6049, "moderate"), (0.61, "substantial"),
    (0.80, "substantial"), (0.85, "almost perfect"), (1.0, "almost perfect"),
])
def test_kappa_bands_are_landis_and_koch_on_the_value_shown(value, word):
    # The band of the value as shown: 0.6049 reads "0.60", which is moderate (0.41-0.60).
    assert agreement_word(value, "cohen_kappa") == word


def test_alpha_bands_are_krippendorffs_and_text_has_two_decimals():
    assert agreement_word(0.85, "krippendorff_alpha") == "reliable"
    assert agreement_word(0.70, "Krippendorff's α") == "tentative only"
    assert agreement_word(0.5, "alpha") == "unreliable"
    assert agreement_text(0.16666666666666666, "Cohen's κ") == "0.17 (slight)"
    assert agreement_text(None, "Cohen's κ") == "–"
    assert agreement_text(float("nan"), "Fleiss' κ") == "–"
    with pytest.raises(ValueError, match="no agreement bands"):
        agreement_word(0.5, "percent_agreement")
    assert "Landis & Koch" in help_for("agreement bands")  # the source, on the Glossary page
    assert "Krippendorff" in help_for("agreement bands")
    assert (plural(1, "rule"), plural(3, "rule")) == ("1 rule", "3 rules")


QUEUE = ["r1", "r2"]


def lab(item, who, value):
    return Label(item, RULE_CORRECTNESS, who, value, "duplicate" if value == "incorrect" else None)


def test_an_annotator_sees_agreement_only_when_the_queue_is_closed_for_them():
    a, b = Annotator("a"), Annotator("b")
    labels = [lab("r1", "a", "correct"), lab("r1", "b", "correct"), lab("r2", "b", "incorrect")]
    # a has not labelled r2: the figures would tell a how b labelled it.
    access = agreement_access(a, labels, [], RULE_CORRECTNESS, QUEUE)
    assert not access.visible and "labelled all 2 items of this queue (1 to go)" in access.reason
    # a labels r2 the other way: a disagreement nobody settled yet.
    labels.append(lab("r2", "a", "correct"))
    access = agreement_access(a, labels, [], RULE_CORRECTNESS, QUEUE)
    assert not access.visible and "the open ones (1 item" in access.reason
    # A reviewer adjudicates it: closed; now a may see the figures, and so may b.
    adjudicated = [Adjudication("r2", RULE_CORRECTNESS, "rita", "correct")]
    assert agreement_access(a, labels, adjudicated, RULE_CORRECTNESS, QUEUE).visible
    assert agreement_access(b, labels, adjudicated, RULE_CORRECTNESS, QUEUE).visible
    # A reviewer sees them all along; a model's labels do not settle anything.
    assert agreement_access(Annotator("rita", "reviewer"), labels[:1], [], RULE_CORRECTNESS,
                            QUEUE).visible
    model = [*labels[:3], Label("r2", RULE_CORRECTNESS, "a", "incorrect", "duplicate",
                                source="model")]
    assert not agreement_access(a, model, [], RULE_CORRECTNESS, QUEUE).visible


def test_the_annotate_page_shows_an_annotator_the_figures_once_closed(db, skill):  # noqa: F811
    from store.annotation import add_annotator, add_label
    from tests.test_page_annotate import frame, sign_in
    from workbench.annotation.items import rule_item

    add_annotator(db, "a")
    add_annotator(db, "b")
    for rid in skill.graph.rules:  # both label every rule, the same way: all unanimous
        for who in ("a", "b"):
            add_label(db, lab(rule_item(skill, rid), who, "correct"), actor=COMMAND_LINE)
    at = sign_in("a")
    at.radio(key="ann_mode").set_value("Progress & agreement").run()
    assert not at.exception
    agreement = frame(at, "Krippendorff's α").set_index("task")
    assert list(agreement.index) == ["rule correctness (correct or not)",
                                     "rule correctness by error type"]
    assert agreement.loc["rule correctness (correct or not)", "agreement"] == "100%"
