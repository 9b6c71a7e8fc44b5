"""Recall–tokens curves: gold coverage of each policy-access strategy at matched budgets.

For every budget (a share of the routed SKILLs' RawSkill tokens) each case is audited without
a judge with ``seed_target = share * raw``: ``cdg`` and ``no-closure`` choose seeds to fit
it, ``bm25`` and ``dense`` fill it with their best passages, ``raw`` is the whole document
(which fits only at share 1.0: below that it is BudgetExceeded and covers nothing, since
RawSkill is never truncated). Coverage is the share of cases with gold governing rules whose
context holds all of them: by rule id for rule contexts, by source span for passage and
document contexts (a passage covers a rule when the rule's spans lie inside it), exactly as
``workbench metrics`` counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.metrics import aligned_lines
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.strategies import get_strategy
from workbench.vocabulary import JudgeMode, StrategyName

CURVE_STRATEGIES: tuple[str, ...] = (StrategyName.CDG, StrategyName.NO_CLOSURE, StrategyName.BM25,
                                      StrategyName.DENSE, StrategyName.RAW)
DEFAULT_SHARES = (0.05, 0.10, 0.15, 0.20, 0.30)


def covers(trace: Any, case: AuditCase, index: AuditIndex) -> bool:
    """Whether the trace's context holds every gold rule of ``case`` (id, else source span)."""
    gold = case.gold_rules
    if not gold or trace.error is not None:
        return False
    in_context = set(trace.units) | {r for ids in trace.closure.values() for r in ids}
    for rid in gold:
        if rid in in_context:
            continue
        owners = [s for s in (trace.skills or []) if rid in index.skill(s).graph.rules]
        if not owners:
            return False
        spans = [(sp.start, sp.end) for sp in index.skill(owners[0]).graph.rules[rid].spans]
        units = [u for u in trace.unit_spans.values() if u["skill"] == owners[0]]
        if not spans or not all(
            any(a <= s and e <= b for u in units for a, b in u["spans"]) for s, e in spans
        ):
            return False
    return True


@dataclass
class CurvePoint:
    strategy: str
    share: float
    cases: int
    coverage: float
    mean_tokens: float  # rendered context tokens (cases with a context)
    mean_target: float
    errors: dict[str, int] = field(default_factory=dict)


@dataclass
class Curve:
    points: list[CurvePoint]
    raw_tokens: float  # mean RawSkill tokens of the cases' routed SKILLs
    dataset: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "raw_tokens": self.raw_tokens,
                "points": [asdict(p) for p in self.points]}

    def coverage(self, strategy: str, share: float) -> float:
        for p in self.points:
            if p.strategy == strategy and abs(p.share - share) < 1e-9:
                return p.coverage
        raise KeyError((strategy, share))


def tally(
    cases: Sequence[AuditCase], index: AuditIndex, strat: Any, options: Sequence[AuditOptions]
) -> tuple[float, float, dict[str, int]]:
    """Audit each case (``options[i]`` for ``cases[i]``, no judge) and return the share whose
    context holds every gold rule, the mean context tokens of the cases that got a context,
    and the count of each error kind."""
    covered, tokens, errors = 0, [], {}
    for case, opts in zip(cases, options, strict=True):
        trace = audit_case(case, index, strat, None, opts)
        if trace.error is not None:
            errors[trace.error.kind] = errors.get(trace.error.kind, 0) + 1
        else:
            tokens.append(trace.context_tokens)
        covered += covers(trace, case, index)
    n = len(cases)
    return (covered / n if n else float("nan"),
            sum(tokens) / len(tokens) if tokens else 0.0, errors)


def coverage_curve(
    index: AuditIndex,
    cases: Iterable[AuditCase],
    shares: Sequence[float] = DEFAULT_SHARES,
    strategies: Sequence[str] = CURVE_STRATEGIES,
    options: AuditOptions | None = None,
    progress: Callable[[str, float], None] | None = None,
    dataset: str = "",
) -> Curve:
    """Coverage and tokens per (strategy, share) over the cases that have gold rules.

    Raises ValueError for an unknown strategy or a share outside (0, 1].
    """
    bad = [s for s in shares if not 0 < s <= 1]
    if bad:
        raise ValueError(f"budget shares must lie in (0, 1] (a share of RawSkill tokens): {bad}")
    base = replace(options or AuditOptions(), judge_mode=JudgeMode.NONE)
    gold_cases = [c for c in cases if c.gold_rules]
    strats = {name: get_strategy(name) for name in strategies}
    points: list[CurvePoint] = []
    raw_sizes = [sum(index.raw_tokens(s) for s in case.skills or [] if s in index)
                 for case in gold_cases]
    for name, strat in strats.items():
        # RawSkill is never truncated: below 100 % it is BudgetExceeded; its own point at
        # 100 % is the reference the shares are taken of.
        mine = [*shares, 1.0] if name == "raw" and 1.0 not in shares else shares
        for share in mine:
            if progress:
                progress(name, share)
            targets = [max(int(share * raw), 1) for raw in raw_sizes]
            options = [base.with_context(seed_target=t, budget=t if name == "raw" else None)
                       for t in targets]
            coverage, mean_tokens, errors = tally(gold_cases, index, strat, options)
            n = len(gold_cases)
            points.append(CurvePoint(name, share, n, coverage, mean_tokens,
                                     sum(targets) / n if n else 0.0, errors))
    raw_mean = sum(raw_sizes) / len(raw_sizes) if raw_sizes else 0.0
    return Curve(points, raw_mean, dataset)


def format_curve(curve: Curve) -> str:
    """Coverage (and mean context tokens) per strategy and budget, as a plain-text table."""
    shares = sorted({p.share for p in curve.points})
    names = list(dict.fromkeys(p.strategy for p in curve.points))
    by = {(p.strategy, p.share): p for p in curve.points}
    header = ["strategy", *(f"{s:.0%} ({int(s * curve.raw_tokens)} tok)" for s in shares)]
    rows = [header]
    for n in names:
        rows.append([n, *(f"{by[n, s].coverage:.3f} @ {by[n, s].mean_tokens:.0f}"
                          if (n, s) in by else "-" for s in shares)])
    lines = aligned_lines(rows)
    n_cases = curve.points[0].cases if curve.points else 0
    lines.append(f"(gold coverage @ mean context tokens; {n_cases} cases with gold rules; "
                 f"mean RawSkill {curve.raw_tokens:.0f} tokens)")
    return "\n".join(lines)
