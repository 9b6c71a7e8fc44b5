"""One verdict per case, everywhere (issue 53 "Must show"), on the demo as ``make demo`` stores
it with the rules found for its score-decided verdicts (``tests/decided_demo.py``; the real
model's answers replayed): for each of the 21 cases the label is the same in ``workbench
verdicts``, the OTLP and Langfuse exports, the Review card, the Replay card and Browse table,
and Evaluate's per-case table; every violation carries a rule of its closure and no
violation's reason says the reply complies; an overturn of a score-decided violation is
stored with ``shown: violation``, ``analyst_label: compliant`` and counts as compliant.
The same labels are read in real Chromium by ``tests/e2e/test_decided_labels.py``."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.decided_demo import DATASET, DEMO, ROOT, RUN, seed_decided_demo
from workbench.cli import main
from workbench.decision import says_complies

LABELS = {"Violation": "violation", "Compliant": "compliant", "To review": "review"}


@pytest.fixture
def demo(demo_db):
    eng, _index, cases = demo_db
    seed_decided_demo(str(eng.url))
    return eng, [c.id for c in cases]


def verdicts_json(capsys) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["verdicts", "--dataset", DATASET, "--json"]) == 0
    return {(r := json.loads(line))["case"]: r for line in capsys.readouterr().out.splitlines()}


def card_label(at: AppTest) -> str:
    """The decided label the verdict card's header shows."""
    found = [LABELS[e.value] for kind in (at.error, at.success, at.warning) for e in kind
             if e.value in LABELS]
    assert len(found) == 1, found
    return found[0]


def test_every_violation_carries_its_rule_and_words(demo, capsys):
    eng, ids = demo
    rows = verdicts_json(capsys)
    assert sorted(rows) == sorted(ids)
    closure = {}
    from store.audit_repo import latest_traces

    for (cid, _s), t in latest_traces(eng, DATASET).items():
        closure[cid] = set(t.units) | set(t.closure_ids)
    violations = [r for r in rows.values() if r["label"] == "violation"]
    assert len(violations) >= 5  # the demo's score-decided violations, each with its rule found
    for r in violations:
        assert r["rules"] and set(r["rules"]) <= closure[r["case"]], r["case"]
        assert not says_complies(r["reason"]), r["case"]
        assert r["score_source"] == "activations" and r["setting_version"] == 1
        assert r["rule_text"] and r["rule_text"][0]["id"] == r["rules"][0]
    for r in rows.values():
        assert r["label"] in ("violation", "compliant", "review")
        if r["label"] == "review":  # says why, plainly
            assert r["doubt"] and not says_complies(r["reason"])


def test_the_label_is_the_same_on_every_surface(demo, capsys, tmp_path):
    eng, ids = demo
    labels = {cid: r["label"] for cid, r in verdicts_json(capsys).items()}
    # Exports, from the traces file and the dataset's setting, as `make demo` users run them.
    for fmt in ("otlp", "langfuse"):
        out = tmp_path / f"{fmt}.json"
        assert main(["export-verdicts", str(DEMO / "traces_cdg.jsonl"), "--format", fmt,
                     "--threshold", f"dataset:{DATASET}", "--out", str(out)]) == 0
        data = json.loads(out.read_text())
        if fmt == "otlp":
            got = {}
            for rec in data["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
                attrs = {a["key"]: a["value"] for a in rec["attributes"]}
                got[attrs["skillcdg.case_id"]["stringValue"]] = \
                    attrs["gen_ai.evaluation.score.label"]["stringValue"]
                if attrs["gen_ai.evaluation.score.label"]["stringValue"] == "violation":
                    assert not says_complies(attrs["gen_ai.evaluation.explanation"]["stringValue"])
        else:
            got = {e["body"]["metadata"]["case_id"]: e["body"]["value"] for e in data["batch"]
                   if e["body"]["dataType"] == "CATEGORICAL"}
        assert got == labels, fmt
    # Evaluate's per-case table.
    ev = AppTest.from_file(str(ROOT / "pages" / "evaluate.py"), default_timeout=120).run()
    assert not ev.exception
    per_case = next(df.value for df in ev.dataframe if "agrees with gold" in df.value.columns)
    assert dict(zip(per_case["case"], per_case["verdict"], strict=True)) == labels
    # Replay's Browse table.
    rp = AppTest.from_file(str(ROOT / "pages" / "replay.py"), default_timeout=120)
    rp.query_params.update({"dataset": DATASET, "case": ids[0]})
    rp.run()
    assert not rp.exception
    browse = next(df.value for df in rp.dataframe if "agrees with gold" in df.value.columns)
    assert dict(zip(browse["case"], browse["verdict"], strict=True)) == \
        {c: labels[c] for c in browse["case"]}
    # The Review card and the Replay card of every case.
    for cid in ids:
        rv = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=120)
        rv.query_params.update({"dataset": DATASET, "case": cid, "strategy": "cdg",
                                "reasons": "none"})
        rv.run()
        assert not rv.exception
        assert f"case {cid} · cdg" in next(t.value for t in rv.text if " · case " in t.value)
        assert card_label(rv) == labels[cid], f"Review {cid}"
        rp = AppTest.from_file(str(ROOT / "pages" / "replay.py"), default_timeout=120)
        rp.query_params.update({"dataset": DATASET, "case": cid})
        rp.run()
        assert not rp.exception
        assert card_label(rp) == labels[cid], f"Replay {cid}"


def test_an_overturn_of_a_score_decided_violation_counts_as_compliant(demo, capsys):
    eng, _ids = demo
    rows = verdicts_json(capsys)
    # mor-009: the judge's words said compliant, the activation score decides violation.
    cid = "mor-009-refund-without-return-limit"
    assert rows[cid]["label"] == "violation" and rows[cid]["judge"]["violation"] is False
    rv = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=120)
    rv.query_params.update({"dataset": DATASET, "case": cid, "strategy": "cdg", "reasons": "none"})
    rv.run()
    rv.text_input(key="rv_reviewer").set_value("ada").run()
    assert not rv.button(key="rv_wrong_rule").disabled  # "wrong rule" on every violation card
    note = next(w for w in rv.text_input if w.key.startswith("rv_note_"))
    note.set_value("a refund without a return is allowed under this limit").run()
    rv.button(key="rv_overturn").click().run()
    assert not rv.exception
    from store.review import decisions_for

    [d] = decisions_for(eng, DATASET)
    assert (d.decision, d.shown, d.shown_source, d.setting_version, d.analyst_label) == (
        "overturn", "violation", "activations", 1, "compliant")
    # Counted as the analyst saying compliant: the record, calibration, "Analysts vs gold".
    assert verdicts_json(capsys)[cid]["review"] == {
        "decision": "overturn", "shown": "violation", "analyst_label": "compliant",
        "reviewer": "ada"}
    from store.labelled import labelled_traces

    assert labelled_traces(eng, DATASET)[1][cid] is False  # gold says violation
    capsys.readouterr()
    assert main(["review", "decisions", "--dataset", DATASET, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out.splitlines()[0])
    assert (listed["shown"], listed["analyst_label"], listed["run"]) == ("violation", "compliant", RUN)
    from workbench.review.queue import agreement, build_queue

    items = build_queue([(RUN, t) for (_c, _s), t in __import__(
        "store.audit_repo", fromlist=["latest_traces"]).latest_traces(eng, DATASET).items()],
        {cid: "negative"}, DATASET)
    a = agreement(decisions_for(eng, DATASET), items)
    assert (a.gold_n, a.analysts_gold, a.judge_gold) == (1, 0.0, 1.0)
