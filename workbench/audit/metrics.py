"""Metrics over audit traces, per strategy, as in the SkillCDG papers.

- ``acc``: correct verdicts / labelled cases. A case without a usable verdict (judge failure,
  EmptySeed, BudgetExceeded, ...) counts as incorrect. The verdict is the judge's own yes/no
  (the papers' figure) unless decided records are given (``verdicts``, or a saved setting as
  ``threshold``): then it is the record's label (``workbench.decision.DecidedVerdict``, what
  every page shows), and a case "to review" is no decision (counted in ``to_review``).
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
- with a violation probability on the verdicts (``workbench.decision``): ``auroc``
  of the probability; ``f1_at_threshold`` / ``acc_at_threshold`` of the decisions
  (``workbench.decision.decide``) of a given number, of a saved setting (with an activation
  scorer, its scores: ``activations``, and ``auroc`` is theirs), or else of a monotone
  calibration cross-validated by conversation (each fold decided at a calibrated 0.5 by the
  calibration fitted on the other folds); ``acc_confident_half``: accuracy of those
  decisions on the half of the cases decided with the most confidence. Over labelled cases
  with a score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.audit.trace import AuditTrace
from workbench.decision import DecidedVerdict, DecisionSetting, decide, decided_verdict
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
    to_review: int = 0  # judged cases whose decided record is "to review" (records given)
    with_probability: int = 0  # labelled cases whose verdict has a probability
    auroc: float = NAN
    threshold: float = NAN
    threshold_source: str = ""  # "given", "saved", "saved, activation scorer", "calibrated out of fold"
    score_source: str = ""  # what ``auroc`` ranks by: "judge" (its words) or "activations"
    scorer: str = ""  # "built-in" when the built-in activation scorer decides (no saved setting)
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
    threshold: float | DecisionSetting | None = None,
    activations: Mapping[str, float] | None = None,
    verdicts: Mapping[tuple[str, str], DecidedVerdict] | None = None,
) -> list[StrategyMetrics]:
    """Metrics per strategy (in first-seen order) of ``traces`` (read from files with
    ``workbench.audit.trace_file.read_traces``, from the store with ``store.audit_repo``).

    ``labels`` (case id -> "positive"/"negative") override the labels stored in traces;
    ``gold_rules`` (case id -> governing rule id or ids) enables ``coverage``; ``gold_spans``
    (case id -> [(SKILL, spans of one gold rule), ...]) extends it to passage and document
    contexts. ``threshold``: the number or saved setting that decides for the ``*_at_threshold`` figures
    (default: cross-validated, see the module doc). ``verdicts``: the decided records by
    (case id, strategy); with a saved setting and none given, they are built under it.
    """
    traces = list(traces)
    if verdicts is None and isinstance(threshold, DecisionSetting):
        verdicts = _records(traces, threshold, activations)
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
            record = verdicts.get((t.id, t.strategy)) if verdicts is not None else None
            # Judged: an answer, or (with records) a decision by an activation score alone.
            judged = record.decided is not None if record is not None else verdict is not None
            if judged:
                m.judged += 1
                m.to_review += record is not None and record.in_doubt
            actual = label_violation(_label(t, labels))
            if actual is not None:
                m.labelled += 1
                decided = judged and (record is None or not record.in_doubt)
                if decided:
                    predicted = record.violation if record is not None else bool(verdict.violation)
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
        _probability_metrics(m, items, labels, threshold, activations)
        out.append(m)
    return out


MIN_FOR_CROSS_VALIDATION = 10


def _records(traces: list[AuditTrace], setting: DecisionSetting,
             activations: Mapping[str, float] | None) -> dict[tuple[str, str], DecidedVerdict]:
    """The decided records of ``traces`` under a saved ``setting`` (its scorer's outputs by
    case id in ``activations``); no explanation is known here."""
    from dataclasses import replace

    if setting.scorer is not None and activations:
        setting = replace(setting, case_scores={(t.id, t.strategy): activations[t.id]
                                                for t in traces if t.id in activations})
    return {(t.id, t.strategy): decided_verdict(t, saved=(0, setting)) for t in traces}


def _probability_metrics(m: StrategyMetrics, items: list[AuditTrace],
                         labels: Mapping[str, str | None] | None,
                         threshold: float | DecisionSetting | None,
                         activations: Mapping[str, float] | None = None) -> None:
    """AUROC of the score the decision reads, and the decisions' figures: with a saved
    setting (``threshold`` a DecisionSetting; its activation scorer's outputs in
    ``activations``), that setting decides; with a number, the judge's probability at or
    above it is a violation; with neither, a calibration cross-validated by conversation."""
    from workbench.decision import accuracy_at_coverage, auroc, counts, out_of_fold
    from workbench.decision.scorers import logit

    setting = (threshold if isinstance(threshold, DecisionSetting)
               else DecisionSetting(float(threshold)) if threshold is not None else None)
    by_activation = setting is not None and setting.scorer is not None
    scores, truth, groups, decisions = [], [], [], []
    for t in items:
        actual, verdict = label_violation(_label(t, labels)), t.verdict
        if actual is None or (verdict is None and not by_activation):
            continue
        if by_activation:  # a trace scored only (no judge's answer) counts too
            a = (activations or {}).get(t.id)
            if a is None:
                continue
            scores.append(float(a))
            p = verdict.probability if verdict is not None else None
            decisions.append(decide(setting, activation=a, probability=p))
        elif verdict.probability is not None:
            scores.append(logit(verdict.probability))  # the one-feature scorer of the words
            if setting is not None:
                decisions.append(decide(setting, probability=verdict.probability))
        else:
            continue
        truth.append(actual)
        groups.append(t.session or t.id)
    m.with_probability = len(scores)
    if not scores:
        return
    m.score_source = "activations" if by_activation else "judge"
    if setting is not None and setting.fitted_on.get("builtin"):
        m.scorer = "built-in"
    m.auroc = auroc(scores, truth)
    if setting is not None:
        m.threshold = setting.threshold
        m.threshold_source = ("saved, activation scorer" if by_activation else
                              "saved" if isinstance(threshold, DecisionSetting) else "given")
        decided = [d.violation for d in decisions]
        conf = [d.confidence for d in decisions]
    elif len(scores) >= MIN_FOR_CROSS_VALIDATION and len(set(groups)) >= 2:
        oof = out_of_fold(scores, truth, groups, 0.5)
        m.threshold, m.threshold_source = 0.5, "calibrated out of fold"
        decided, conf = list(oof.decided), list(oof.confidences)
    else:
        return
    c = counts(decided, truth)
    m.f1_at_threshold, m.acc_at_threshold = c.f1, c.accuracy
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
