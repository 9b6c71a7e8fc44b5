"""Headless parity (issue #32 item 6): a script confirms a verdict with ``workbench review
decide`` and labels a rule with ``workbench annotate label``, and both show on the pages
(AppTest), through the same store functions and role checks the pages use."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from store import repo
from store.annotation import adjudications_for, labels_for
from store.review import decisions_for
from tests.test_page_review import card, db, plain  # noqa: F401  (fixture)
from workbench.annotation.items import rule_items
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
CASE = "mor-001-delay-not-yet-late"


def cli(*args: str) -> int:
    return main(list(args))


def test_a_script_decides_and_labels_and_the_pages_show_both(db, capsys):  # noqa: F811
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "cdg",
               "--decision", "confirm", "--reviewer", "ada") == 0  # the single user (no roster)
    assert "ada confirmed the cdg verdict (violation) on " + CASE in capsys.readouterr().out
    skill = repo.load_skill(db, "merchant-order-refund")
    rule = next(iter(skill.graph.rules))
    assert cli("annotate", "label", "--annotator", "bea", "--skill", skill.name, "--rule", rule,
               "--value", "incorrect", "--error-type", "duplicate", "--note", "same as the next") == 0
    [label] = labels_for(db, "rule_correctness")
    assert (label.annotator, label.value, label.error_type) == ("bea", "incorrect", "duplicate")

    # Review: the verdict shows the script's decision, and it counts in the progress.
    review = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=60)
    review.query_params.update({"dataset": "demo", "case": CASE, "strategy": "cdg"})
    review.run()
    review.text_input(key="rv_reviewer").set_value("cy").run()
    assert f"case {CASE} · cdg" in card(review)
    history = next(df.value for df in review.dataframe if "decision" in df.value.columns
                   and "reviewer" in df.value.columns)
    assert history[["reviewer", "decision"]].values.tolist() == [["ada", "confirmed"]]
    assert review.get("progress")[0].proto.text == "1 of 6 reviewed (0 by you)"

    # Annotate: bea, signed in, continues after the rule the script labelled (the first of
    # the queue), and finds her label there one step back.
    annotate = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    annotate.session_state["identity"] = {"name": "bea", "role": "annotator"}
    annotate.session_state["ann_skill"] = skill.name
    annotate.run()
    assert not annotate.exception
    assert annotate.get("progress")[0].proto.text.startswith("Rule 2 of ")
    assert "you labelled 1 of" in annotate.get("progress")[0].proto.text
    annotate.button(key="rc_prev").click().run()
    assert "Your label: incorrect (duplicate)" in [t.value for t in annotate.text]


def test_the_command_line_refuses_what_the_role_may_not_do(db, capsys):  # noqa: F811
    # The roster the pages sign in with: from now on the store checks each person's role.
    for name, role in (("ada", "admin"), ("ann", "annotator"), ("otto", "author"), ("rita", "reviewer")):
        single = ["--no-password"] if role == "admin" else []  # a test machine: one user
        assert cli("people", "add", name, "--role", role, "--as", "ada", *single) == 0
    capsys.readouterr()
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "cdg",
               "--decision", "confirm", "--as", "ann") == 2
    assert "may not decide reviews; nothing was saved" in capsys.readouterr().err
    # Nobody records for someone else, and without --as nobody acts at all.
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "cdg",
               "--decision", "confirm", "--reviewer", "rita", "--as", "ada") == 2
    assert "records under their own name" in capsys.readouterr().err
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "cdg",
               "--decision", "confirm", "--reviewer", "ada") == 2
    assert "say who is acting" in capsys.readouterr().err
    skill = repo.load_skill(db, "merchant-order-refund")
    rule = next(iter(skill.graph.rules))
    assert cli("annotate", "label", "--as", "otto", "--skill",
               skill.name, "--rule", rule, "--value", "correct") == 2
    assert "may not label" in capsys.readouterr().err
    assert decisions_for(db) == [] and labels_for(db, "rule_correctness") == []
    # A reviewer's label is the adjudication, as on the page.
    assert cli("annotate", "label", "--as", "rita", "--skill",
               skill.name, "--rule", rule, "--value", "correct") == 0
    [adj] = adjudications_for(db, "rule_correctness")
    assert (adj.reviewer, adj.value, adj.item) == ("rita", "correct", next(
        k for k, r in rule_items(skill).items() if r == rule))


def test_decide_undo_and_listing(db, capsys):  # noqa: F811
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE,
               "--decision", "confirm", "--reviewer", "ada") == 2  # two strategies judged it
    assert "pass --strategy" in capsys.readouterr().err
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "raw",
               "--decision", "overturn", "--reviewer", "ada") == 2
    assert "needs a note" in capsys.readouterr().err
    assert cli("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy", "raw",
               "--decision", "wrong-rule", "--note", "MOR-R003", "--reviewer", "ada") == 0
    assert cli("review", "undo", "--dataset", "demo", "--reviewer", "ada") == 0
    assert "undone: right verdict, wrong rule (raw verdict on" in capsys.readouterr().out
    assert cli("review", "undo", "--dataset", "demo", "--reviewer", "ada") == 1  # nothing left
    assert cli("review", "decisions", "--dataset", "demo", "--json") == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [('"decision": "wrong-rule"' in x, '"decision": "undo"' in x) for x in lines] == [
        (True, False), (False, True)]


def test_the_parsers_lists_match_the_core():
    from workbench.annotation.labels import CRITERIA, ERROR_TYPES
    from workbench.commands import _annotate_label, review
    from workbench.review.decisions import DECISIONS

    assert review.DECISIONS == DECISIONS
    assert _annotate_label.ERROR_TYPES == ERROR_TYPES and _annotate_label.CRITERIA == CRITERIA


@pytest.mark.parametrize("args, message", [
    (("--case-key", "run/c1", "--value", "pass"), "needs --case-key and --criterion"),
    (("--skill", "nope", "--rule", "R1", "--value", "correct"), "no SKILL 'nope'"),
    (("--case-key", "run/c1", "--criterion", "edges_necessary", "--value", "correct"),
     "pass or fail"),
])
def test_annotate_label_errors_name_the_fix(db, capsys, args, message):  # noqa: F811
    assert cli("annotate", "label", "--annotator", "bea", *args) == 2
    assert message in plain(capsys.readouterr().err)
