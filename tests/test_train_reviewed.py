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


def test_train_data_from_store_reads_the_decided_records(db, tmp_path, capsys):  # noqa: F811
    """The labels come from the decided records under the dataset's setting (a verbal
    threshold of 0.2 here), not from the judge's words read again at 0.5: an unreviewed card
    "to review" is left out, and the rules are the record's (of the judged closure)."""
    from store import audit_repo
    from store.thresholds import save_threshold, scope_name
    from workbench.decision import DecisionSetting

    latest = audit_repo.latest_traces(db, "demo")
    rule = {cid: (t.closure_ids or t.units)[0] for (cid, s), t in latest.items() if s == "cdg"}
    answers = {  # case -> (judge's yes/no, its probability, the ids it named)
        # 0.3 >= 0.2: violation over the judge's "compliant", no rule found -> to review.
        "mor-001-delay-not-yet-late": (False, 0.3, []),
        # A violation; the judge also named an id outside the closure.
        "mor-003-delay-premier-credit": (True, 0.9, ["NOT-IN-CLOSURE"]),
        "air-001-compensation-regular-economy": (False, 0.1, []),  # compliant
        # 0.3: compliant at 0.5, a violation at this dataset's 0.2.
        "ret-002-cancel-pending": (True, 0.3, []),
    }
    traces = []
    for cid, (violation, p, named) in answers.items():
        t = latest[(cid, "cdg")]
        rules = named + ([rule[cid]] if violation else [])
        t.verdict = Verdict(violation, "the judge's reason", rules, probability=p)
        traces.append(t)
    audit_repo.save_traces(db, traces, "run-p", "demo", actor=COMMAND_LINE)
    save_threshold(db, scope_name("dataset", "demo"), DecisionSetting(threshold=0.2),
                   base_version=None, actor=COMMAND_LINE)
    add_decisions(db, [ReviewDecision(
        "demo", "run-p", "mor-003-delay-premier-credit", "cdg", "ada", "wrong-rule",
        "another rule applies", True, shown="violation", analyst_label="violation")],
        actor=COMMAND_LINE)
    out = tmp_path / "reviewed.jsonl"
    assert main(["train", "data", "--from-store", "demo", "--out", str(out),
                 "--unreviewed-weight", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "left out, to review, not reviewed: 1" in printed
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"mor-003-delay-premier-credit", "air-001-compensation-regular-economy",
                         "ret-002-cancel-pending"}  # mor-001 is to review: no label yet
    assert rows["ret-002-cancel-pending"]["label"] == "negative"  # the record's violation
    assert rows["ret-002-cancel-pending"]["review"]["shown"] == "violation"
    assert rows["air-001-compensation-regular-economy"]["label"] == "positive"
    marked = rows["mor-003-delay-premier-credit"]["review"]
    assert marked["wrong_rule"] is True and marked["flipped"] is False
    assert marked["cited_rules"] == [rule["mor-003-delay-premier-credit"]]  # not NOT-IN-CLOSURE


def test_reviewed_labels_of_cards_to_review():
    from dataclasses import replace

    items = _items()
    # Card "to review" on a (which the score decided violation): unreviewed, left out even
    # when weighted; an analyst's overturn gives compliant, flipped against what it stood on.
    items[0].decided = replace(items[0].verdict, label="review", rules=())
    out = reviewed_labels(items[:1], [], unreviewed_weight=0.5)
    assert out.labels == [] and dict(out.left_out) == {"to review, not reviewed": 1}
    overturn = ReviewDecision("demo", "r1", "a", "cdg", "ada", "overturn", "fine", True, T0,
                              id=1, shown="review", analyst_label="compliant")
    (got,) = reviewed_labels(items[:1], [overturn]).labels
    assert (got.label, got.flipped, got.shown, got.decision) == (
        "positive", True, "review", "overturn")
