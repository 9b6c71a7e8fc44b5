"""Metrics over audit traces, per strategy, as in the SkillCDG papers.

- ``acc``: correct verdicts / labelled cases. A case without a usable verdict (judge failure,
  EmptySeed, BudgetExceeded, ...) counts as incorrect.
- ``f1``: violation-F1 (violation is the positive class) over the cases with a parsed
  verdict only, 2TP / (2TP + FP + FN): a judge that never flags a violation scores 0 on
  cases that hold some (as weak judges do; Recovery needs that 0); NaN only when there is no
  violation to find and none was flagged. ``precision`` = TP / (TP + FP), ``recall`` =
  TP / (TP + FN): NaN where undefined (no predicted / no actual violations), never 0.
- ``coverage``: the share of cases whose context contains all gold governing rules
  (``gold.governing_rule`` or ``gold.governing_rules`` of the case): by rule id for
  rule-based strategies, and by source span for the others (a passage or document whose
  span holds the gold rule's spans) when ``gold_spans`` are given.
- tokens and latency: mean rendered context tokens, mean online tokens (prompt + completion
  of every model call of the case), mean wall time per case (``timings_ms.total``).
- with a violation probability on the verdicts (``workbench.audit.calibration``): ``auroc``
  of the probability; ``f1_at_threshold`` / ``acc_at_threshold`` deciding ``p >= threshold``
  — a given (or saved) threshold, or else one chosen by 5-fold cross-validation grouped by
  conversation, each fold scored with the threshold chosen on the other folds;
  ``acc_confident_half``: accuracy of those decisions on the half of the cases decided with
  the most (out-of-fold calibrated) confidence. Over labelled cases with a probability.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.audit.trace import AuditTrace
from workbench.vocabulary import ErrorKind, StrategyName, label_violation

NAN = float("nan")


@dataclass
class StrategyMetrics:
    group: str  # strategy, plus judge mode / keyword method when they differ
    n: int = 0
    labelled: int = 0
    judged: int = 0
    correct: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    acc: float = NAN
    precision: float = NAN
    recall: float = NAN
    f1: float = NAN
    coverage: float = NAN
    coverage_n: int = 0
    mean_context_tokens: float = NAN
    mean_online_tokens: float = NAN
    mean_latency_ms: float = NAN
    errors: dict[str, int] = field(default_factory=dict)
    with_probability: int = 0  # labelled cases whose verdict has a probability
    auroc: float = NAN
    threshold: float = NAN
    threshold_source: str = ""  # "given" or "cross-validated"
    f1_at_threshold: float = NAN
    acc_at_threshold: float = NAN
    acc_confident_half: float = NAN

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(a: float, b: float) -> float:
    return a / b if b else NAN


RULE_STRATEGIES = (StrategyName.CDG, StrategyName.NO_CLOSURE, StrategyName.NO_KEYWORDS)
# Errors before a context exists: such a trace's context size says nothing, so it is not averaged.
NO_CONTEXT_KINDS = (ErrorKind.EMPTY_SEED, ErrorKind.NO_ROUTE, ErrorKind.UNKNOWN_SKILL)


def _span_covered(trace: AuditTrace, skill: str, spans: list[tuple[int, int]]) -> bool:
    """Every gold span lies inside some unit span of the same SKILL."""
    if not spans:
        return False
    units = [u for u in trace.unit_spans.values() if u.get("skill") == skill]
    return all(
        any(a <= s and e <= b for u in units for a, b in u.get("spans") or []) for s, e in spans
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else NAN


def group_name(trace: AuditTrace, with_mode: bool) -> str:
    name = str(trace.strategy)
    if with_mode:
        name += f"/{trace.judge_mode}/{trace.keywords_method}"
    return name


def _label(trace: AuditTrace, labels: Mapping[str, str | None] | None) -> str | None:
    """The case's gold label: from ``labels`` when it names the case, else the trace's own."""
    return labels[trace.id] if labels is not None and trace.id in labels else trace.label


def compute_metrics(
    traces: Iterable[AuditTrace],
    labels: Mapping[str, str | None] | None = None,
    gold_rules: Mapping[str, str | list[str]] | None = None,
    gold_spans: Mapping[str, list[tuple[str, list[tuple[int, int]]]]] | None = None,
    threshold: float | None = None,
) -> list[StrategyMetrics]:
    """Metrics per strategy (in first-seen order) of ``traces`` (read from files with
    ``workbench.audit.trace_file.read_traces``, from the store with ``store.audit_repo``).

    ``labels`` (case id -> "positive"/"negative") override the labels stored in traces;
    ``gold_rules`` (case id -> governing rule id or ids) enables ``coverage``; ``gold_spans``
    (case id -> [(SKILL, spans of one gold rule), ...]) extends it to passage and document
    contexts. ``threshold``: decide ``p >= threshold`` for the ``*_at_threshold`` figures
    (default: cross-validated, see the module doc).
    """
    traces = list(traces)
    modes = {(t.judge_mode, t.keywords_method) for t in traces}
    with_mode = len(modes) > 1
    groups: dict[str, list[AuditTrace]] = {}
    for t in traces:
        groups.setdefault(group_name(t, with_mode), []).append(t)
    out = []
    for name, items in groups.items():
        m = StrategyMetrics(group=name, n=len(items))
        ctx, online, latency = [], [], []
        covered = 0
        for t in items:
            verdict, error = t.verdict, t.error
            if error:
                m.errors[error.kind] = m.errors.get(error.kind, 0) + 1
            if verdict is not None:
                m.judged += 1
            actual = label_violation(_label(t, labels))
            if actual is not None:
                m.labelled += 1
                if verdict is not None:
                    predicted = bool(verdict.violation)
                    m.correct += predicted == actual
                    m.tp += predicted and actual
                    m.fp += predicted and not actual
                    m.fn += (not predicted) and actual
                    m.tn += (not predicted) and (not actual)
            if not error or error.kind not in NO_CONTEXT_KINDS:
                ctx.append(float(t.context_tokens or 0))
            online.append(float(t.online_tokens))
            latency.append(float(t.timings_ms.get("total", 0.0)))
            if gold_rules is not None and t.id in gold_rules:
                gold = gold_rules[t.id]
                gold = [gold] if isinstance(gold, str) else list(gold)
                if t.strategy in RULE_STRATEGIES:
                    units = set(t.units) | set(t.closure_ids)
                    m.coverage_n += 1
                    covered += all(g in units for g in gold)
                elif gold_spans is not None and t.id in gold_spans:
                    m.coverage_n += 1
                    covered += all(_span_covered(t, sk, sp) for sk, sp in gold_spans[t.id])
        m.acc = _ratio(m.correct, m.labelled)
        m.precision = _ratio(m.tp, m.tp + m.fp)
        m.recall = _ratio(m.tp, m.tp + m.fn)
        m.f1 = _ratio(2 * m.tp, 2 * m.tp + m.fp + m.fn)
        m.coverage = _ratio(covered, m.coverage_n)
        m.mean_context_tokens = _mean(ctx)
        m.mean_online_tokens = _mean(online)
        m.mean_latency_ms = _mean(latency)
        _probability_metrics(m, items, labels, threshold)
        out.append(m)
    return out


MIN_FOR_CROSS_VALIDATION = 10


def _probability_metrics(m: StrategyMetrics, items: list[AuditTrace],
                         labels: Mapping[str, str | None] | None, threshold: float | None) -> None:
    from workbench.audit.calibration import (
        Scored,
        accuracy_at_coverage,
        auroc,
        best_threshold,
        counts,
        fit_platt,
        out_of_fold,
    )

    scored = []
    for t in items:
        actual, verdict = label_violation(_label(t, labels)), t.verdict
        if actual is None or verdict is None or verdict.probability is None:
            continue
        scored.append(Scored(float(verdict.probability), actual, t.session or t.id, t.id))
    m.with_probability = len(scored)
    if not scored:
        return
    m.auroc = auroc(scored)
    truth = [s.violation for s in scored]
    if threshold is not None:
        m.threshold, m.threshold_source = float(threshold), "given"
        decided = [s.probability >= threshold for s in scored]
        platt = fit_platt(scored)
        q = [platt(s.probability) if platt else s.probability for s in scored]
    elif len(scored) >= MIN_FOR_CROSS_VALIDATION and len({s.group for s in scored}) >= 2:
        oof = out_of_fold(scored)
        m.threshold, m.threshold_source = best_threshold(scored), "cross-validated"
        decided, q = oof.decided, oof.calibrated
    else:
        return
    c = counts(decided, truth)
    m.f1_at_threshold, m.acc_at_threshold = c.f1, c.accuracy
    conf = [qi if d else 1 - qi for qi, d in zip(q, decided, strict=True)]
    right = [d == t for d, t in zip(decided, truth, strict=True)]
    m.acc_confident_half = accuracy_at_coverage(conf, right, 0.5)


def format_table(rows: list[StrategyMetrics]) -> str:
    """Strategies side by side as a plain-text table (columns = strategies)."""
    if not rows:
        return "(no traces)"
    fields = [
        ("cases", lambda m: f"{m.n}"),
        ("labelled", lambda m: f"{m.labelled}"),
        ("judged", lambda m: f"{m.judged}"),
        ("ACC", lambda m: _fmt(m.acc)),
        ("violation-F1", lambda m: _fmt(m.f1)),
        ("precision", lambda m: _fmt(m.precision)),
        ("recall", lambda m: _fmt(m.recall)),
        ("gold in context", lambda m: _fmt(m.coverage) if m.coverage_n else "-"),
        ("AUROC (probability)", lambda m: _fmt(m.auroc) if m.with_probability else "-"),
        ("threshold", lambda m: f"{_fmt(m.threshold)} {m.threshold_source}" if m.threshold_source else "-"),
        ("violation-F1 at threshold", lambda m: _fmt(m.f1_at_threshold) if m.threshold_source else "-"),
        ("ACC at threshold", lambda m: _fmt(m.acc_at_threshold) if m.threshold_source else "-"),
        ("ACC, most confident half", lambda m: _fmt(m.acc_confident_half) if m.threshold_source else "-"),
        ("context tokens", lambda m: _fmt(m.mean_context_tokens, 1)),
        ("online tokens", lambda m: _fmt(m.mean_online_tokens, 1)),
        ("latency ms", lambda m: _fmt(m.mean_latency_ms, 1)),
        ("errors", lambda m: ", ".join(f"{k}={v}" for k, v in sorted(m.errors.items())) or "-"),
    ]
    header = ["metric", *(m.group for m in rows)]
    body = [[label, *(fn(m) for m in rows)] for label, fn in fields]
    return "\n".join(aligned_lines([header, *body]))


def aligned_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    """Plain-text table rows: columns as wide as their widest cell, the first left-aligned, the rest right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in rows]


def _fmt(x: float, digits: int = 3) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"
