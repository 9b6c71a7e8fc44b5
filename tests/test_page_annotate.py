"""The Annotate page, headless with AppTest against a temporary database: the sidebar identity,
keyboard labelling, blind mode, adjudication, reference rules, CDG inspection and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import repo
from store.annotation import add_annotator, add_label, adjudications_for, labels_for
from workbench.annotation.items import reference_item, rule_item
from workbench.annotation.labels import (
    CDG_INSPECTION,
    REFERENCE_RULE,
    RULE_CORRECTNESS,
    Label,
    ReferenceRule,
    inspection_item,
)
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "annotate.py")


@pytest.fixture
def refund_index_data(refund_index_data):
    """The refund SKILL with markup in a rule's action (the page must show it as text)."""
    refund_index_data["skills"][0]["rules"][0]["action"] += ' <img src=x onerror="alert(1)">'
    return refund_index_data


@pytest.fixture
def db(refund_db):
    """The page's store (``WORKBENCH_DB``): the refund SKILL above, version 1."""
    return refund_db


@pytest.fixture
def skill(db):
    return repo.load_skill(db, "refunds")


def sign_in(name: str, role: str = "annotator") -> AppTest:
    """The page as ``name`` sees it, signed in through the sidebar identity (the same session
    keys ``components.identity``'s local sign-in fills)."""
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["identity"] = {"name": name, "role": role}
    at.session_state["user_name"] = name
    at.run()
    assert not at.exception
    return at


def frame(at: AppTest, column: str):
    """The first table with ``column`` (st.dataframe keys do not reach AppTest)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def unescaped(markdown: str) -> str:
    """Alert text without the Markdown escapes the page adds to user-quoting messages."""
    return markdown.replace("\\", "")


def texts(at: AppTest) -> str:
    return "\n".join([t.value for t in at.text] + [c.value for c in at.caption]
                     + [h.proto.body for h in at.html])


def test_the_sidebar_identity_is_the_annotator(db):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception and not at.radio  # nothing to annotate before signing in
    assert "Sign in (sidebar)" in at.info[0].value
    assert not at.text_input  # no second name field on the page
    for role in ("analyst", "author"):  # roles that may not label are told why
        at = sign_in("al", role)
        assert not at.radio and "annotator or reviewer or admin" in at.info[0].value.replace("\\", "")
    at = sign_in("ada")
    assert "Annotating as ada" in unescaped(texts(at)) and at.radio(key="ann_mode")
    at = sign_in("ada", "reviewer")  # the name labels as an annotator already
    assert "already registered as 'annotator'" in unescaped(at.error[0].value)
    at = sign_in("root", "admin")  # admins annotate as reviewers: every label, adjudication
    assert "you see every label and adjudicate" in unescaped(texts(at))
    assert "No disagreement waits" in at.success[0].value


def test_labelling_with_the_shortcut_buttons(db, skill):
    at = sign_in("ada")
    shortcuts = {b.key: b.proto.shortcut for b in at.button}  # normalised to lower case
    assert shortcuts["rc_correct"] == "y" and shortcuts["rc_next"] == "j"
    assert shortcuts["rc_prev"] == "k"
    assert [shortcuts[f"rc_err_{e}"] for e in ("not_atomic", "duplicate")] == ["1", "7"]
    # The rule card escapes rule text; the source span is highlighted.
    card = next(h.proto.body for h in at.html if "wb-rule-card" in h.proto.body)
    assert "&lt;img src=x onerror=" in card and "<img" not in card
    assert "R1" in card
    at.button(key="rc_correct").click().run()  # R1 correct, moves to R2
    assert "2/4" in next(h.proto.body for h in at.html if "wb-rule-card" in h.proto.body)
    at.text_input(key=f"rc_note/{rule_item(skill, 'R2')}").set_value("acts on the wrong order")
    at.button(key="rc_err_wrong_action").click().run()  # R2 incorrect, moves to R3
    at.button(key="rc_prev").click().run()  # back to R2
    assert "Your label: incorrect (wrong action)" in texts(at)
    labels = labels_for(db, RULE_CORRECTNESS, annotator="ada")
    assert [(lab.item, lab.value, lab.error_type, lab.note) for lab in labels] == [
        (rule_item(skill, "R1"), "correct", None, ""),
        (rule_item(skill, "R2"), "incorrect", "wrong_action", "acts on the wrong order"),
    ]
    # The queue of this SKILL version was created once, in rule order.
    from store.annotation import task_items

    assert task_items(db, RULE_CORRECTNESS, "refunds", 1) == [
        rule_item(skill, r) for r in ("R1", "R2", "R3", "R4")]
    # A new session continues at the first rule ada has not labelled (R3).
    at = sign_in("ada")
    assert "3/4" in next(h.proto.body for h in at.html if "wb-rule-card" in h.proto.body)


def test_blind_mode_never_shows_other_labels_to_an_annotator(db, skill):
    add_label(db, Label(rule_item(skill, "R1"), RULE_CORRECTNESS, "bob", "incorrect",
                        "hallucinated", "bob-secret-note"), actor=COMMAND_LINE)
    add_label(db, Label(rule_item(skill, "R1"), RULE_CORRECTNESS, "judge", "correct",
                        note="judge-secret", source="model"), actor=COMMAND_LINE)

    def shown(at: AppTest) -> str:
        return texts(at) + "".join(m.value for m in at.markdown) + "".join(
            d.value.to_csv() for d in at.dataframe)

    at = sign_in("ada")
    assert "never shown to you" in texts(at)
    assert "bob" not in shown(at) and "secret" not in shown(at)
    at.button(key="rc_correct").click().run()
    at.button(key="rc_prev").click().run()  # back on R1, now labelled by ada
    assert "Your label: correct" in texts(at)
    assert "bob" not in shown(at) and "secret" not in shown(at)  # still blind after labelling
    rita = sign_in("rita", "reviewer")  # the reviewer sees every label
    rita.toggle(key="rc_only_disagreements").set_value(False).run()
    others = frame(rita, "annotator")
    assert sorted(others["annotator"]) == ["ada", "bob", "judge"]
    assert "bob-secret-note" in set(others["note"])


def test_reviewer_sees_all_and_adjudicates_disagreements(db, skill):
    for who, value, error in (("a", "correct", None), ("b", "incorrect", "duplicate")):
        add_label(db, Label(rule_item(skill, "R3"), RULE_CORRECTNESS, who, value, error), actor=COMMAND_LINE)
    for who in ("a", "b"):  # agreement on R1 needs no adjudication
        add_label(db, Label(rule_item(skill, "R1"), RULE_CORRECTNESS, who, "correct"), actor=COMMAND_LINE)
    at = sign_in("rita", "reviewer")
    card = next(h.proto.body for h in at.html if "wb-rule-card" in h.proto.body)
    assert "R3" in card and "1/1" in card  # only the disagreement is queued
    assert sorted(frame(at, "annotator")["annotator"]) == ["a", "b"]
    assert at.button(key="rc_correct").label == "Adjudicate correct"
    at.button(key="rc_err_duplicate").click().run()
    [decision] = adjudications_for(db, RULE_CORRECTNESS)
    assert (decision.item, decision.reviewer, decision.value, decision.error_type) == (
        rule_item(skill, "R3"), "rita", "incorrect", "duplicate")
    assert "No disagreement waits" in at.success[-1].value
    assert labels_for(db, RULE_CORRECTNESS, annotator="rita") == []  # reviewers do not vote


def add_button(at: AppTest):
    return next(b for b in at.button if b.label == "Add reference rule")


def test_reference_rule_entry_without_seeing_the_extraction(db, skill):
    at = sign_in("ada")
    at.radio(key="ann_mode").set_value("Reference inventory").run()
    assert not at.exception
    shown = texts(at) + "".join(m.value for m in at.markdown)
    # R3's extracted wording is not in the source; it must not appear here.
    assert "refund the amount paid minus coupon discount" not in shown
    assert not any("wb-rule-card" in h.proto.body for h in at.html)
    at.text_input(key="ref_condition").set_value("an order was cancelled")
    at.text_input(key="ref_action").set_value("refund what was paid, less the coupon")
    at.selectbox(key="ref_modality").set_value("required")
    at.text_area(key="ref_quote").set_value("Refund the amount paid after\ncancellation")
    add_button(at).click().run()
    assert not at.exception and "Reference rule added." in unescaped(at.success[0].value)
    [label] = labels_for(db, REFERENCE_RULE)
    rule = ReferenceRule.from_value(label.value)
    quote = "Refund the amount paid after cancellation"
    start = skill.source.index(quote)
    assert (label.item, label.annotator) == (reference_item(skill), "ada")
    assert rule.spans == ((start, start + len(quote)),) and rule.modality == "required"
    assert frame(at, "quote")["action"][0] == "refund what was paid, less the coupon"
    # A quote that is not in the source is refused with the reason; nothing is stored.
    at.text_input(key="ref_condition").set_value("x")
    at.text_input(key="ref_action").set_value("y")
    at.text_area(key="ref_quote").set_value("![x](http://example.invalid/x.png) not in the policy")
    add_button(at).click().run()
    assert "not in the SKILL source" in at.error[0].value
    # The message quotes the input with its Markdown escaped: no image is rendered.
    assert "\\!\\[x\\]\\(http" in at.error[0].value
    assert len(labels_for(db, REFERENCE_RULE)) == 1


def test_annotator_retracts_a_reference_rule(db, skill):
    at = sign_in("ada")
    at.radio(key="ann_mode").set_value("Reference inventory").run()
    for action in ("refund what was paid", "refund twice"):
        at.text_input(key="ref_condition").set_value("an order was cancelled")
        at.text_input(key="ref_action").set_value(action)
        at.selectbox(key="ref_modality").set_value("required")
        at.text_area(key="ref_quote").set_value("Refund the amount paid after\ncancellation")
        add_button(at).click().run()
    assert list(frame(at, "quote")["action"]) == ["refund what was paid", "refund twice"]
    at.selectbox(key="ref_retract_choice").set_value(1)
    next(b for b in at.button if b.label == "Retract").click().run()
    assert not at.exception
    assert "Reference rule retracted." in unescaped(at.success[0].value)
    assert list(frame(at, "quote")["action"]) == ["refund what was paid"]
    assert len(labels_for(db, REFERENCE_RULE)) == 3  # the trail keeps both rules and the retraction


def test_cdg_inspection_from_uploaded_traces(db):
    trace = {"case_id": "c1", "skills": ["refunds"], "seeds": ["R3"], "closure": ["R3", "R2", "R1"],
             "history": "user: cancel and refund please", "response": "Refunded <b>all</b>.",
             "verdict": {"violation": True, "reason": "coupon not deducted",
                         "violated_rules": ["R3"]}}
    at = sign_in("ada")
    at.radio(key="ann_mode").set_value("CDG inspection").run()
    assert "No audit results are stored yet" in at.info[0].value
    at.file_uploader(key="insp_upload").set_value(
        ("t.jsonl", (json.dumps(trace) + "\n{bad\n").encode(), "application/jsonl")).run()
    assert not at.exception
    assert "t.jsonl:2: not valid JSON" in unescaped(at.warning[0].value)  # file:line, as every reader
    assert "Require edges: R3 requires R2; R2 requires R1" in texts(at)
    assert list(frame(at, "seed")["rule"]) == ["R3", "R2", "R1"]
    item = inspection_item("c1", "skill_governs")
    at.radio(key=f"insp/{item}").set_value("pass")
    at.radio(key=f"insp/{inspection_item('c1', 'verdict_follows')}").set_value("fail")
    at.text_input(key=f"insp_note/{item}").set_value("refunds policy applies")
    at.button[-1].click().run()
    assert "Saved 2 criterion labels." in unescaped(at.success[0].value)
    stored = {(lab.item, lab.value, lab.note) for lab in labels_for(db, CDG_INSPECTION)}
    assert stored == {(item, "pass", "refunds policy applies"),
                      (inspection_item("c1", "verdict_follows"), "fail", "")}


def test_cdg_inspection_of_stored_traces_by_a_reviewer(db):
    from sqlmodel import Session

    from store.core_tables import AuditResultRow

    trace = {"id": "c7", "strategy": "skillcdg", "skills": ["refunds"],
             "closure": {"refunds": ["R2", "R1"]}, "context": "[R2] ...",
             "verdict": {"violation": False, "reason": "ok", "violated_rules": []}}
    with Session(db) as session:
        session.add(AuditResultRow(run_id="run-1", dataset="demo", case_id="c7",
                                   strategy="skillcdg", violation=False,
                                   trace_json=json.dumps(trace)))
        session.commit()
    item = inspection_item("run-1/c7", "edges_necessary")
    add_label(db, Label(item, CDG_INSPECTION, "a", "fail", note="R1 is not needed"), actor=COMMAND_LINE)
    at = sign_in("rita", "reviewer")
    at.radio(key="ann_mode").set_value("CDG inspection").run()
    assert at.radio(key="insp_source").value == "Stored audit results"
    assert "Require edges: R2 requires R1" in texts(at)
    assert "R1 is not needed" in set(frame(at, "note")["note"])  # reviewers see every label
    at.radio(key=f"insp/{item}").set_value("pass")
    at.button[-1].click().run()
    [decision] = adjudications_for(db, CDG_INSPECTION)
    assert (decision.item, decision.value, decision.reviewer) == (item, "pass", "rita")


def test_progress_agreement_and_report(db, skill):
    add_annotator(db, "a")
    add_annotator(db, "b")
    for rid, (va, vb) in {"R1": ("correct", "correct"), "R2": ("correct", "incorrect")}.items():
        add_label(db, Label(rule_item(skill, rid), RULE_CORRECTNESS, "a", va,
                            None if va == "correct" else "duplicate"), actor=COMMAND_LINE)
        add_label(db, Label(rule_item(skill, rid), RULE_CORRECTNESS, "b", vb,
                            None if vb == "correct" else "duplicate"), actor=COMMAND_LINE)
    at = sign_in("a")
    at.radio(key="ann_mode").set_value("Progress & agreement").run()
    assert not at.exception
    progress = frame(at, "rules labelled").set_index("annotator")
    assert progress.loc["a", "rules labelled"] == 2 and progress.loc["a", "rules in queue"] == 4
    # Blind: "a" has labelled 2 of 4 rules and R2 is a disagreement; b's progress, the
    # queue's counts and the agreement figures would tell "a" how "b" labelled (issue #45:
    # "unanimous 1" said b agreed on R1), so they are withheld and the page says until when.
    assert list(progress.index) == ["a"]
    assert "unanimous" not in texts(at)
    assert not [d for d in at.dataframe if "Krippendorff's α" in d.value.columns]
    assert "once you have labelled all 4 items" in unescaped(at.info[0].value)

    at.radio(key="ann_mode").set_value("Dataset report").run()
    # The report pools every annotator's (blind) labels: an annotator is refused it.
    assert not at.button and "reviewer or admin" in at.info[0].value.replace("\\", "")
    assert not at.get("download_button")
    at = sign_in("rita", "reviewer")  # a reviewer sees every label, and so the figures
    at.radio(key="ann_mode").set_value("Progress & agreement").run()
    assert "unanimous 1, adjudicated 0, open 3" in texts(at)
    assert list(frame(at, "rules labelled")["annotator"]) == ["a", "b"]
    agreement = frame(at, "Krippendorff's α").set_index("task")  # plain names, not raw keys
    # R1 agreed, R2 not: 50 %. Cohen's kappa: p_o = 1/2; a said "correct" twice, b once, so
    # p_e = 1 * 1/2 + 0 * 1/2 = 1/2 and kappa = 0: two decimals and the Landis-Koch band.
    assert agreement.loc["rule correctness (correct or not)", "agreement"] == "50%"
    assert "n_items" not in agreement.columns and "rule_correctness" not in agreement.index
    assert agreement.loc["rule correctness (correct or not)", "Cohen's κ"] == "0.00 (slight)"
    at.radio(key="ann_mode").set_value("Dataset report").run()
    at.selectbox(key="rep_sim").set_value("jaccard").run()
    at.button(key="rep_build").click().run()
    assert not at.exception
    table = frame(at, "rule correctness")
    assert list(table["skill"]) == ["refunds", "pooled"]
    assert table.loc[0, "correct"] == 1 and table.loc[0, "unresolved"] == 3
    assert {b.label for b in at.get("download_button")} >= {"Report JSONL", "Report CSV"}
