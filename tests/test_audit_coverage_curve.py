"""Recall–tokens curve, length sweep, their CLI and the Evaluate page section, on the three
CompliBench sample conversations in fixtures/audit/complibench (licence in its NOTICE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.audit.cases import load_cases
from workbench.audit.complibench import import_complibench
from workbench.audit.coverage_curve import coverage_curve, format_curve
from workbench.audit.curve_figure import curve_figure, sweep_figure
from workbench.audit.length_sweep import foreign_clauses, run_sweep, sweep_levels
from workbench.audit.policy import AuditIndex
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.inputs import InputError
from workbench.tokens import count_tokens

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
    lengths = (1100, 2000, 3200)
    levels, cases = sweep_levels(SAMPLE, lengths, [FOREIGN])
    sizes = [lv.actual_tokens for lv in levels]
    assert sizes == sorted(sizes) and sizes[-1] > 2 * sizes[0]
    for lv in levels:
        for skill in lv.index:
            assert count_tokens(skill.source) <= lv.length + 60 or lv.length == lengths[0]
            for rid, rule in skill.graph.rules.items():
                # Spans still point at their rule's text after clauses were inserted.
                assert skill.rule_text(rid).strip() and rule.spans[0].end <= len(skill.source)
        for c in cases:
            for rid in c.gold_rules:
                assert rid in lv.index[c.skills[0]].graph.rules
    # The largest SKILLs needed the other domain's clauses (the sample has 3 workflows).
    assert any(r.startswith("other.") for s in levels[-1].index for r in s.graph.rules)
    rows = run_sweep(levels, cases, ("cdg", "raw"))
    by = {(r.strategy, r.length): r for r in rows}
    assert all(by["raw", n].coverage == 1.0 for n in lengths)
    # cdg's context does not grow with the document (its target is absolute).
    assert by["cdg", 3200].mean_tokens < 1.3 * by["cdg", 1100].mean_tokens + 50
    assert by["raw", 3200].mean_tokens > 2 * by["raw", 1100].mean_tokens
    fig = sweep_figure({"kind": "length-sweep", "rows": [vars(r) for r in rows]})
    assert len(fig.data) == 2


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


def test_evaluate_page_draws_the_saved_results(tmp_path, monkeypatch):
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
    at = AppTest.from_file(str(ROOT / "pages" / "evaluate.py"), default_timeout=60).run()
    assert not at.exception
    assert any(w.value.startswith(r"broken\.json") for w in at.warning)  # escaped: a file name is text
    [chart, *_] = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    assert spec["data"][0]["name"] == "&lt;b&gt;cdg&lt;/b&gt;"  # shown as text, not markup
