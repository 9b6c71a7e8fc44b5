"""Recall–tokens curve, length sweep, their CLI and the Studies page section, on the three
CompliBench sample conversations in fixtures/audit/complibench (licence in its NOTICE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.audit.cases import load_cases
from workbench.audit.importers.complibench import import_complibench
from workbench.audit.policy import AuditIndex
from workbench.cli import main
from workbench.evaluate.coverage_curve import coverage_curve, format_curve
from workbench.evaluate.curve_figure import curve_figure, sweep_figure
from workbench.evaluate.length_sweep import (
    LengthSweepError,
    foreign_clauses,
    format_sweep,
    run_sweep,
    sweep_levels,
)
from workbench.graph import PolicyIndex
from workbench.inputs import InputError
from workbench.llm.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "fixtures" / "audit" / "complibench" / "airlines"
FOREIGN = ROOT / "fixtures" / "audit" / "merchant" / "SKILL.md"


@pytest.fixture(scope="module")
def long_sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("cb") / "long"
    import_complibench(SAMPLE, out, long=True)
    return AuditIndex(PolicyIndex.load(out / "index.json")), load_cases(out / "cases.jsonl")


def test_curve_counts_rules_by_id_and_passages_by_span(long_sample):
    index, cases = long_sample
    curve = coverage_curve(index, cases, (0.1, 0.5), ("cdg", "no-closure", "bm25", "raw"))
    n = sum(1 for c in cases if c.gold_rules)
    assert n and all(p.cases == n for p in curve.points)
    for p in curve.points:
        if p.strategy != "raw":
            # Matched budgets: no strategy gets more context than the others were allowed.
            assert p.mean_tokens <= p.mean_target
    # More budget never loses coverage for the seeded strategies and the baselines.
    for name in ("cdg", "no-closure", "bm25"):
        assert curve.coverage(name, 0.5) >= curve.coverage(name, 0.1)
    # RawSkill is never truncated: it fits only at 100 %, and there it holds every gold rule.
    assert curve.coverage("raw", 0.1) == 0.0 and curve.coverage("raw", 1.0) == 1.0
    raw_point = [p for p in curve.points if p.strategy == "raw" and p.share == 1.0][0]
    assert raw_point.mean_tokens == pytest.approx(curve.raw_tokens, rel=0.01)
    assert "cdg" in format_curve(curve) and "100%" in format_curve(curve)
    fig = curve_figure({"kind": "retrieval", **curve.as_dict()})
    assert {t.name for t in fig.data} == {"cdg", "no-closure", "bm25", "raw"}
    with pytest.raises(ValueError, match="shares must lie"):
        coverage_curve(index, cases, (0.0,), ("cdg",))


def test_length_sweep_keeps_gold_and_grows_with_inapplicable_clauses():
    lengths = (1100, 2000, 2800)  # 2,800: about all the sample and the merchant SKILL hold
    levels, cases = sweep_levels(SAMPLE, lengths, [FOREIGN])
    sizes = [lv.actual_tokens for lv in levels]
    assert sizes == sorted(sizes) and sizes[-1] > 2 * sizes[0]
    for lv in levels:
        for skill in lv.index:
            # Every SKILL reaches its length within 10 % (foreign clauses fill what whole
            # workflows leave) and never passes it by more than a heading.
            assert 0.9 * lv.length <= count_tokens(skill.source) <= lv.length + 60
            for rid, rule in skill.graph.rules.items():
                # Spans still point at their rule's text after clauses were inserted.
                assert skill.rule_text(rid).strip() and rule.spans[0].end <= len(skill.source)
        assert lv.min_tokens <= lv.actual_tokens <= lv.max_tokens
        for c in cases:
            for rid in c.gold_rules:
                assert rid in lv.index[c.skills[0]].graph.rules
    # The largest SKILLs needed the other domain's clauses (the sample has 3 workflows).
    assert any(r.startswith("other.") for s in levels[-1].index for r in s.graph.rules)
    rows = run_sweep(levels, cases, ("cdg", "raw"))
    by = {(r.strategy, r.length): r for r in rows}
    assert all(by["raw", n].coverage == 1.0 for n in lengths)
    # cdg's context does not grow with the document (its target is absolute).
    assert by["cdg", 2800].mean_tokens < 1.3 * by["cdg", 1100].mean_tokens + 50
    assert by["raw", 2800].mean_tokens > 2 * by["raw", 1100].mean_tokens
    assert all(r.judged_cases is None and r.acc is None for r in rows)  # no judge asked
    table = format_sweep(rows)
    for lv in levels:  # the real size on every row, not only in a header
        size = f"{lv.actual_tokens:,.0f} ({lv.min_tokens:,}-{lv.max_tokens:,})"
        assert sum(size in line for line in table.splitlines()) == 2  # cdg and raw
    fig = sweep_figure({"kind": "length-sweep", "rows": [vars(r) for r in rows]})
    assert len(fig.data) == 2
    assert list(fig.data[0].x) == [lv.actual_tokens for lv in levels]  # the sizes reached


def test_length_sweep_stops_naming_the_foreign_text_missing(tmp_path, capsys, monkeypatch):
    """The sample's own workflows and the merchant SKILL hold about 2,870 tokens: 4,000 and
    5,000 cannot be reached. Before, every such length silently produced the same SKILLs;
    now the sweep stops and says how much foreign text to add (5,000 - 2,874 = 2,126)."""
    with pytest.raises(LengthSweepError) as err:
        sweep_levels(SAMPLE, (2000, 4000, 5000), [FOREIGN])
    assert "2 length(s) cannot be reached" in err.value.message
    assert "4,000 reaches 2,874" in err.value.message and "5,000 reaches 2,874" in err.value.message
    assert "about 2,126 tokens of foreign text are missing" in err.value.message
    assert "--foreign" in err.value.hint and "--lengths" in err.value.hint
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(tmp_path / "evals"))
    assert main(["evaluate", "length-sweep", str(SAMPLE), "--lengths", "4000", "--foreign",
                 str(FOREIGN), "--strategies", "raw"]) == 2
    assert "tokens of foreign text are missing" in capsys.readouterr().err
    assert not (tmp_path / "evals").exists()  # nothing half-measured written
    # More foreign text: the same length is reached.
    more = tmp_path / "more.md"
    more.write_text("# Extra\n\n" + "\n\n".join(
        f"Clause {i}: a store credit of {i} points is granted when a parcel arrives late."
        for i in range(200)))
    (level,) = sweep_levels(SAMPLE, (4000,), [FOREIGN, more])[0]
    assert level.min_tokens >= 3600


def always_violation(request) -> dict:
    """A violation of the first rule or passage in context (a violation must cite one)."""
    import re

    text = request["messages"][-1]["content"]
    first = re.search(r"^\[([^\]\s]+)\]", text, re.M)
    return {"violation": True, "violated_rules": [first.group(1)] if first else [],
            "reason": f"scripted: breaks [{first.group(1) if first else '?'}]", "evidence": []}


def test_judged_sweep_reports_acc_and_f1_per_length_and_strategy(tmp_path, monkeypatch, capsys):
    """--judge: the same sample at every length and strategy, judged. A judge that always
    says violation on 2 violations + 2 compliant replies: ACC 2/4 = 0.5, precision 2/4,
    recall 2/2, F1 = 2 * 0.5 * 1 / 1.5 = 0.667."""
    from tests.scripted import ScriptedTransport, scripted_gateway
    from workbench.evaluate.length_sweep import judge_sample
    from workbench.vocabulary import label_violation

    levels, cases = sweep_levels(SAMPLE, (1100, 2000), [FOREIGN])
    sample = judge_sample(cases, 4)
    assert [label_violation(c.label) for c in sample] == [True, False, True, False]
    assert judge_sample(cases, 4) == sample  # the same cases every time
    script = ScriptedTransport(always_violation)
    rows = run_sweep(levels, cases, ("cdg", "bm25"), gateway=scripted_gateway(script),
                     judge_sample_size=4)
    assert len(rows) == 4 and len(script.requests) == 4 * 4  # 4 cases x 2 lengths x 2
    for r in rows:
        assert (r.judged_cases, r.acc, round(r.f1, 3)) == (4, 0.5, 0.667)
        assert r.coverage == r.coverage and r.cases == sum(1 for c in cases if c.gold_rules)
    fig = sweep_figure({"kind": "length-sweep", "rows": [vars(r) for r in rows]}, "acc")
    assert {t.name for t in fig.data} == {"cdg", "bm25"} and list(fig.data[0].y) == [0.5, 0.5]
    assert "judged" in format_sweep(rows) and "0.667" in format_sweep(rows)
    with pytest.raises(ValueError, match="needs a model gateway"):
        run_sweep(levels, cases, ("cdg",), judge_sample_size=2)

    # The CLI: --judge --sample writes the judged rows and the accuracy figure.
    import workbench.commands._common as common

    monkeypatch.setattr(common, "cli_gateway", lambda no_cache, attach="": scripted_gateway(
        ScriptedTransport(always_violation)))
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(tmp_path / "evals"))
    assert main(["evaluate", "length-sweep", str(SAMPLE), "--lengths", "1100,2000", "--foreign",
                 str(FOREIGN), "--strategies", "cdg", "--judge", "--sample", "2",
                 "--figure", str(tmp_path / "acc.html")]) == 0
    saved = json.loads((tmp_path / "evals" / "length-sweep-airlines-judged.json").read_text())
    assert saved["judged"] is True and [r["judged_cases"] for r in saved["rows"]] == [2, 2]
    assert "accuracy (ACC)" in (tmp_path / "acc.html").read_text()
    assert main(["evaluate", "length-sweep", str(SAMPLE), "--judge", "--sample", "0"]) == 2
    assert "--sample" in capsys.readouterr().err


def test_foreign_clauses_are_paragraphs_under_their_heading(tmp_path):
    doc = tmp_path / "shop_policy.md"
    doc.write_text("# Returns\n\nItems can be returned within thirty days of delivery.\n\n"
                   "- Refunds go back to the original payment method only.\n- short\n")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "doc1.json").write_text(json.dumps({"title": "Opening accounts", "content":
                                  "1. The customer must be verified before any account opens."}))
    got = foreign_clauses([doc, kb])
    assert [(c.heading, c.text) for c in got] == [
        ("shop policy: Returns", "Items can be returned within thirty days of delivery."),
        ("shop policy: Returns", "Refunds go back to the original payment method only."),
        ("Opening accounts", "1. The customer must be verified before any account opens.")]
    (kb / "doc2.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="needs a 'content' string"):
        foreign_clauses([kb])
    (kb / "doc2.json").unlink()
    (kb / "legacy.md").write_bytes("# Fees\n\nA fee of 5 \u20ac applies.\n".encode("cp1252"))
    with pytest.raises(InputError, match="legacy.md.*not UTF-8"):  # was a bare codec error
        foreign_clauses([kb])


def test_cli_retrieval_writes_json_and_figure(long_sample, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(tmp_path / "evals"))
    out = tmp_path / "cb"
    import_complibench(SAMPLE, out, long=True)
    rc = main(["evaluate", "retrieval", "--index", str(out / "index.json"), "--cases",
               str(out / "cases.jsonl"), "--budgets", "0.1,0.3", "--strategies", "cdg,bm25",
               "--figure", str(tmp_path / "fig.html")])
    assert rc == 0
    table = capsys.readouterr().out
    assert "cdg" in table and "bm25" in table and "10%" in table
    saved = json.loads((tmp_path / "evals" / "retrieval-cb.json").read_text())
    assert saved["kind"] == "retrieval" and len(saved["points"]) == 4
    assert (tmp_path / "fig.html").stat().st_size > 1000
    assert main(["evaluate", "retrieval", "--index", str(out / "index.json"), "--cases",
                 str(out / "cases.jsonl"), "--budgets", "ten"]) == 2
    assert "comma-separated numbers" in capsys.readouterr().err
    assert main(["evaluate", "retrieval", "--index", str(out / "index.json"), "--cases",
                 str(out / "cases.jsonl"), "--strategies", "cdg,grep"]) == 2
    assert "unknown strategy grep" in capsys.readouterr().err


def test_studies_page_draws_the_saved_results(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'ev.db'}")
    evals = tmp_path / "evals"
    evals.mkdir()
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(evals))
    points = [{"strategy": "<b>cdg</b>", "share": s, "cases": 3, "coverage": c,
               "mean_tokens": 100 * s, "mean_target": 100 * s, "errors": {}}
              for s, c in ((0.05, 0.5), (0.15, 0.9))]
    (evals / "retrieval-x.json").write_text(json.dumps(
        {"kind": "retrieval", "dataset": "x", "raw_tokens": 1000, "points": points}))
    (evals / "broken.json").write_text("{not json")
    at = AppTest.from_file(str(ROOT / "pages" / "studies.py"), default_timeout=60).run()
    assert not at.exception
    assert any(w.value.startswith(r"broken\.json") for w in at.warning)  # escaped: a file name is text
    [chart, *_] = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    assert spec["data"][0]["name"] == "&lt;b&gt;cdg&lt;/b&gt;"  # shown as text, not markup


def test_studies_page_draws_the_judged_sweep_accuracy_by_length(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'ev.db'}")
    evals = tmp_path / "evals"
    evals.mkdir()
    monkeypatch.setenv("WORKBENCH_EVAL_DIR", str(evals))
    rows = [{"length": n, "skill_tokens": n * 0.98, "strategy": s, "cases": 9, "coverage": 0.9,
             "mean_tokens": 100.0, "errors": {}, "judged_cases": 4, "acc": a, "f1": f}
            for n, s, a, f in ((4000, "cdg", 0.75, 0.8), (8000, "cdg", 0.5, None),
                               (4000, "<b>raw</b>", 0.5, 0.667), (8000, "<b>raw</b>", 0.25, 0.4))]
    (evals / "length-sweep-x-judged.json").write_text(json.dumps(
        {"kind": "length-sweep", "dataset": "x", "judged": True, "rows": rows}))
    unjudged = [{**r, "judged_cases": None, "acc": None, "f1": None} for r in rows]
    (evals / "length-sweep-x.json").write_text(json.dumps(
        {"kind": "length-sweep", "dataset": "x", "rows": unjudged}))
    at = AppTest.from_file(str(ROOT / "pages" / "studies.py"), default_timeout=60).run()
    assert not at.exception
    assert "Length sweep: accuracy as the SKILL grows" in [h.value for h in at.subheader]
    # One expander for the judged file only; its two figures (ACC, F1) and the table.
    # (the bundled sweep of docs/evaluations follows the folder's own; left out here)
    judged = [e for e in at.expander if "accuracy by length" in e.label and "bundled" not in e.label]
    assert len(judged) == 1 and "judged" in judged[0].label  # the unjudged file has none
    charts = judged[0].get("plotly_chart")
    assert len(charts) == 2
    acc = json.loads(charts[0].proto.spec)
    assert {t["name"] for t in acc["data"]} == {"cdg", "&lt;b&gt;raw&lt;/b&gt;"}  # escaped
    assert [t["y"] for t in acc["data"] if t["name"] == "cdg"] == [[0.75, 0.5]]
    f1 = json.loads(charts[1].proto.spec)  # a point without F1 (undefined) is left out
    assert [t["y"] for t in f1["data"] if t["name"] == "cdg"] == [[0.8]]
    table = judged[0].dataframe[0].value
    assert list(table.columns) == ["target length", "SKILL tokens", "strategy", "judged cases",
                                   "ACC", "violation-F1", "gold in context"]


def test_judged_sweeps_pass_over_a_result_file_whose_top_level_is_a_list(tmp_path):
    """Any JSON can sit in the evaluations folder; a list (a trace dump, a case list) is not a
    sweep and must not stop the Studies page (it raised AttributeError on ``list.get``)."""
    from components.lab.sweep_accuracy import judged_sweeps

    rows = [{"length": 4000, "strategy": "cdg", "judged_cases": 3, "acc": 0.5, "f1": 0.5}]
    (tmp_path / "a-list.json").write_text(json.dumps([{"kind": "length-sweep"}]))
    (tmp_path / "sweep.json").write_text(json.dumps({"kind": "length-sweep", "rows": rows}))
    assert [name for name, _ in judged_sweeps(tmp_path)] == ["sweep.json"]
