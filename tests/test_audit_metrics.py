"""Metrics against hand-derived values, and the edge cases (no labels, no positives)."""

from __future__ import annotations

import math
from dataclasses import replace

from workbench.audit.metrics import compute_metrics, format_table
from workbench.audit.trace import AuditError, AuditTrace, ModelCall, Verdict


def t(cid, violation, label, strategy="cdg", error=None, ctx=100, tokens=0, ms=10.0, units=()):
    # ``tokens``: the case's online tokens, as one model call's prompt tokens.
    return AuditTrace(
        id=cid, strategy=strategy, label=label, context_tokens=ctx,
        verdict=None if violation is None else Verdict(violation, "", []),
        error=None if error is None else AuditError(error, ""),
        usage=[ModelCall("judge", "judge", tokens, 0, 0.0)] if tokens else [],
        timings_ms={"total": ms}, units=list(units), closure={},
    )


def test_acc_counts_failures_as_wrong_f1_uses_parsed_only():
    traces = [
        t("a", True, "negative"),   # TP
        t("b", True, "positive"),   # FP
        t("c", False, "negative"),  # FN
        t("d", False, "positive"),  # TN
        t("e", None, "negative", error="ModelCallError"),  # failed: wrong for ACC, out of F1
    ]
    [m] = compute_metrics(traces)
    # ACC = 2 correct / 5 labelled = 0.4; P = 1/2, R = 1/2 (e is not parsed), F1 = 0.5.
    assert (m.tp, m.fp, m.fn, m.tn) == (1, 1, 1, 1)
    assert m.acc == 0.4 and m.precision == 0.5 and m.recall == 0.5 and m.f1 == 0.5
    assert m.errors == {"ModelCallError": 1} and m.judged == 4


def test_labels_from_cases_override_and_unlabelled_are_ignored():
    traces = [t("a", True, None), t("b", False, None)]
    [m] = compute_metrics(traces)
    assert m.labelled == 0 and math.isnan(m.acc) and math.isnan(m.f1)
    [m] = compute_metrics(traces, labels={"a": "negative", "b": "negative"})
    # ACC 1/2; P = 1/1, R = 1/2 -> F1 = 2 * 1 * 0.5 / 1.5 = 2/3.
    assert m.acc == 0.5 and m.f1 == 2 / 3


def test_no_predicted_violations_gives_nan_precision_not_zero():
    [m] = compute_metrics([t("a", False, "positive"), t("b", False, "positive")])
    assert m.acc == 1.0 and math.isnan(m.precision) and math.isnan(m.recall) and math.isnan(m.f1)


def test_a_judge_that_never_flags_a_violation_scores_f1_zero_not_undefined():
    # The embedded 0.5B judge answers "compliant" to every case: its violation-F1 is
    # 2TP / (2TP + FP + FN) = 0 (it missed every violation), which Recovery needs as the
    # student's "before"; only its precision is undefined.
    [m] = compute_metrics([t("a", False, "negative"), t("b", False, "positive")])
    assert m.f1 == 0.0 and math.isnan(m.precision) and m.recall == 0.0 and m.acc == 0.5
    # every flag wrong and every violation missed: precision and recall 0, F1 0
    [m] = compute_metrics([t("a", False, "negative"), t("b", True, "positive")])
    assert m.f1 == 0.0 and m.precision == 0.0 and m.recall == 0.0


def test_strategies_side_by_side_with_coverage_and_means():
    traces = [
        t("a", True, "negative", "cdg", ctx=100, tokens=1000, ms=10, units=["R1", "R2"]),
        t("b", False, "positive", "cdg", ctx=300, tokens=3000, ms=30, units=["R3"]),
        t("a", None, "negative", "raw", error="EmptySeed", ctx=0, tokens=0, ms=1),
        t("b", True, "positive", "raw", ctx=900, tokens=500, ms=3),
    ]
    rows = {m.group: m for m in compute_metrics(traces, gold_rules={"a": "R2", "b": ["R3", "R9"]})}
    cdg, raw = rows["cdg"], rows["raw"]
    assert cdg.mean_context_tokens == 200 and cdg.mean_online_tokens == 2000 and cdg.mean_latency_ms == 20
    assert cdg.coverage == 0.5 and cdg.coverage_n == 2
    assert raw.coverage_n == 0 and raw.mean_context_tokens == 900  # EmptySeed has no context
    table = format_table(list(rows.values()))
    assert table.splitlines()[0].split() == ["metric", "cdg", "raw"]
    assert "EmptySeed=1" in table


def test_judge_modes_are_separate_groups():
    a = t("a", True, "negative")
    b = replace(t("a", False, "negative"), judge_mode="per-rule")
    assert [m.group for m in compute_metrics([a, b])] == ["cdg/whole/lexical", "cdg/per-rule/lexical"]


def test_span_coverage_for_passage_contexts():
    hit = replace(t("a", None, "negative", "bm25"), unit_spans={"s#p1": {"skill": "s", "spans": [[0, 50]]}})
    miss = replace(t("b", None, "negative", "bm25"), unit_spans={"s#p2": {"skill": "s", "spans": [[60, 90]]}})
    other = replace(t("c", None, "negative", "bm25"), unit_spans={"x#p1": {"skill": "x", "spans": [[0, 99]]}})
    gold_spans = {"a": [("s", [(10, 20)])], "b": [("s", [(50, 70)])], "c": [("s", [(10, 20)])]}
    [m] = compute_metrics([hit, miss, other], gold_rules={"a": "R", "b": "R", "c": "R"},
                          gold_spans=gold_spans)
    # a: [10, 20) inside [0, 50); b: [50, 70) straddles two passages; c: another SKILL.
    assert (m.coverage_n, m.coverage) == (3, 1 / 3)
