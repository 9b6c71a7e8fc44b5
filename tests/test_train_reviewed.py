"""Training from reviewed audits (issue #32 item 7): ``train data --from-store DATASET`` takes
the label the analysts stand behind: confirmed verdicts keep the judge's, overturned ones
flip it, "wrong rule" keeps it but is marked (and its cited rules are not the target's),
split reviews and unreviewed verdicts are left out unless weighted."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from store.review import add_decisions
from tests.test_page_review import db  # noqa: F401  (fixture)
from workbench.audit.trace import AuditTrace, Verdict
from workbench.cli import main
from workbench.identity.roles import COMMAND_LINE
from workbench.review.queue import ReviewDecision, build_queue
from workbench.train.reviewed import reviewed_labels

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _items():
    traces = [("r1", AuditTrace("a", "cdg", verdict=Verdict(True, "r", ["R1"]))),
              ("r1", AuditTrace("b", "cdg", verdict=Verdict(True, "r", ["R2"]))),
              ("r1", AuditTrace("c", "cdg", verdict=Verdict(False, "r", []))),
              ("r1", AuditTrace("d", "cdg", verdict=Verdict(True, "r", ["R4"]))),
              ("r1", AuditTrace("e", "cdg", verdict=Verdict(False, "r", [])))]
    return build_queue(traces, None, "demo")


def dec(case, what, who="ada", note="n", judge=True, n=1, undoes=None):
    return ReviewDecision("demo", "r1", case, "cdg", who, what, note, judge, T0, id=n,
                          undoes=undoes)


def test_reviewed_labels_follow_the_analysts():
    decisions = [dec("a", "confirm", n=1), dec("b", "overturn", n=2),
                 dec("c", "overturn", judge=False, n=3),
                 dec("d", "wrong-rule", note="R9 applies", n=4),
                 dec("e", "confirm", who="ada", judge=False, n=5),
                 dec("e", "overturn", who="bob", judge=False, n=6)]
    out = reviewed_labels(_items(), decisions)
    got = {r.case_id: (r.label, r.decision, r.flipped, r.wrong_rule) for r in out.labels}
    assert got == {
        "a": ("negative", "confirm", False, False),  # violation confirmed
        "b": ("positive", "overturn", True, False),  # violation overturned: compliant
        "c": ("negative", "overturn", True, False),  # compliant overturned: violation
        "d": ("negative", "wrong-rule", False, True),  # the violation stands, marked
    }
    assert dict(out.left_out) == {"analysts split evenly": 1}  # e: one each way
    assert next(r for r in out.labels if r.case_id == "d").cited_rules == ("R4",)


def test_an_undone_decision_does_not_count_and_unreviewed_can_be_weighted():
    decisions = [dec("a", "overturn", n=1), dec("a", "undo", n=2, undoes=1)]
    assert reviewed_labels(_items(), decisions).labels == []
    weighted = reviewed_labels(_items(), decisions, unreviewed_weight=0.25).labels
    assert [(r.case_id, r.decision, r.weight, r.label) for r in weighted][:2] == [
        ("a", "unreviewed", 0.25, "negative"), ("b", "unreviewed", 0.25, "negative")]


def test_train_data_from_store_writes_the_reviewed_labels(db, tmp_path, capsys):  # noqa: F811
    # Demo traces (tests.test_page_review): cdg says mor-001 violation (gold violation),
    # mor-003 violation (gold compliant), air-001 compliant (gold violation).
    add_decisions(db, [
        ReviewDecision("demo", "run-cdg", "mor-001-delay-not-yet-late", "cdg", "ada",
                       "wrong-rule", "MOR-R001 is the rule broken", True),
        ReviewDecision("demo", "run-cdg", "mor-003-delay-premier-credit", "cdg", "ada",
                       "overturn", "premier credit is allowed", True),
        ReviewDecision("demo", "run-raw", "air-001-compensation-regular-economy", "raw", "ada",
                       "confirm", "", True),  # another strategy: not in cdg's records
    ], actor=COMMAND_LINE)
    out = tmp_path / "reviewed.jsonl"
    assert main(["train", "data", "--from-store", "demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "from 4 cdg verdict(s) of demo: 2 reviewed (1 overturned: label flipped; 1 marked " \
           "'wrong rule'); left out, not reviewed: 2" in printed
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"mor-001-delay-not-yet-late", "mor-003-delay-premier-credit"}
    flipped = rows["mor-003-delay-premier-credit"]
    assert flipped["label"] == "positive" and flipped["violation"] is False
    assert json.loads(flipped["completion"])["violation"] is False
    assert flipped["review"]["flipped"] is True and flipped["weight"] == 1.0
    assert flipped["review"]["notes"] == ["premier credit is allowed"]
    marked = rows["mor-001-delay-not-yet-late"]
    assert marked["label"] == "negative" and marked["review"]["wrong_rule"] is True
    assert marked["prompt"] and marked["keyword_prompt"]  # the judge and keyword prompts
    # The weighted variant keeps the two unreviewed ones with the judge's verdict.
    assert main(["train", "data", "--from-store", "demo", "--out", str(out),
                 "--unreviewed-weight", "0.5"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["weight"] for r in rows) == [0.5, 0.5, 1.0, 1.0]


def test_train_data_from_store_errors_name_the_fix(db, tmp_path, capsys):  # noqa: F811
    out = str(tmp_path / "x.jsonl")
    assert main(["train", "data", "--from-store", "nope", "--out", out]) == 2
    assert "dataset 'nope' has no stored cases" in capsys.readouterr().err
    assert main(["train", "data", "--from-store", "demo", "--cases", "c.jsonl", "--out", out]) == 2
    assert "leave out --cases" in capsys.readouterr().err
    assert main(["train", "data", "--out", out]) == 2
    assert "needs --index and --cases (or --from-store DATASET)" in capsys.readouterr().err
