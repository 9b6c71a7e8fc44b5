"""Outcomes rows from audit runs: one row per audited case of one judge.

``correct`` is 1 when the verdict matches the gold label (``negative`` = violation); a trace
without a verdict (judge failure, EmptySeed, BudgetExceeded, ...) counts as incorrect, as in
``workbench.audit.metrics``. Unlabelled cases are left out: there is nothing to score.

Complexity: ``C = I_d * I_c`` (``workbench.graph.stats.complexity``) of the case's SKILLs taken
together — the SKILLs the case names, else the union of the SKILLs its traces were routed to.
We use the SKILLs' whole graphs, not the closure-induced subgraph of one trace, because:

- it is the first paper's definition (density and coupling of the governing SKILLs' CDGs; the
  density's denominator is the SKILL source, which a closure has no share of);
- it is a property of the instance, not of a run: a closure depends on the keywords (an LLM
  keyworder gives each run its own) and on the strategy (``raw`` has none), whereas the
  outcomes table requires one complexity per instance whichever judge scored it;
- it is defined for every trace, including failed ones, which must still be rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.audit.trace import AuditTrace, latest_per_case
from workbench.errors import WorkbenchError
from workbench.graph import PolicyIndex
from workbench.graph.stats import complexity as graph_complexity
from workbench.vocabulary import ErrorKind, label_violation


class TracesError(WorkbenchError, ValueError):
    """Traces, cases and index do not fit together; the message says what to fix."""


def _case_map(cases: Iterable[Any] | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cases, Mapping):
        return dict(cases)
    return {c.id: c for c in cases}


def select_traces(traces: Iterable[AuditTrace], strategy: str | None = None) -> list[AuditTrace]:
    """The newest trace per case of one strategy, judge mode and keyword method.

    Raises :class:`TracesError` when the traces mix several of them and ``strategy`` does not
    pick one: rows of one judge must score one configuration, once per case.
    """
    rows = list(traces)
    if strategy is not None:
        rows = [t for t in rows if t.strategy == strategy]
    configs = sorted({(t.strategy, t.judge_mode, t.keywords_method) for t in rows})
    if len(configs) > 1:
        named = ", ".join("/".join(c) for c in configs)
        raise TracesError(
            f"the traces mix {len(configs)} configurations (strategy/judge mode/keywords: "
            f"{named}); pick one strategy (--strategy) or pass one run per file"
        )
    # A resumed or repeated audit: the newest trace per case wins.
    return latest_per_case(rows, key=lambda t: t.id)


def instance_skills(traces: Iterable[AuditTrace],
                    cases: Iterable[Any] | Mapping[str, Any]) -> dict[str, list[str]]:
    """SKILL names per case id: those the case names, else every SKILL any of its traces
    was routed to (sorted), so the set does not depend on which judge ran."""
    by_id = _case_map(cases)
    routed: dict[str, set[str]] = {}
    for t in traces:
        routed.setdefault(t.id, set()).update(t.skills)
    return {cid: list(case.skills) if (case := by_id.get(cid)) is not None and case.skills else sorted(names)
            for cid, names in routed.items()}


def outcomes_from_traces(
    traces: Iterable[AuditTrace],
    cases: Iterable[Any] | Mapping[str, Any],
    index: PolicyIndex,
    params_b: float,
    dataset: str,
    *,
    strategy: str | None = None,
    skills: Mapping[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """Outcome rows of one judge (``params_b`` billion parameters) on one dataset.

    ``traces``: :class:`~workbench.audit.AuditTrace` objects of one run configuration
    (or pick it with ``strategy``). ``cases``: the audited
    :class:`~workbench.audit.AuditCase` objects (gold label, session, named SKILLs); a trace
    whose case is missing falls back to the label, session and routing in the trace.
    ``skills``: SKILL names per case id, to share one choice across several judges' traces
    (see :func:`instance_skills`); by default computed from these traces.

    Rows: ``instance, dataset, session, params_b, complexity, correct`` plus ``label``,
    ``strategy``, ``judge_mode`` and ``error`` (why there is no verdict: the failure kind, or
    ``NotJudged`` for judge mode ``none``; empty when judged). A case without a
    session is its own session. Validate with ``workbench.scaling.outcomes_from_records``.
    Raises :class:`TracesError` for SKILLs missing from the index or a case with no SKILL.
    """
    if not isinstance(params_b, int | float) or isinstance(params_b, bool) or not params_b > 0:
        raise TracesError(f"params_b must be the judge size in billions (> 0), got {params_b!r}")
    if not str(dataset).strip():
        raise TracesError("dataset must be a non-empty name")
    chosen = select_traces(traces, strategy)
    by_id = _case_map(cases)
    names_of = dict(skills) if skills is not None else instance_skills(chosen, by_id)
    memo: dict[tuple[str, ...], float] = {}
    rows = []
    for t in chosen:
        cid = t.id
        case = by_id.get(cid)
        label = case.label if case is not None else t.label
        if label_violation(label) is None:
            continue
        names = tuple(sorted(names_of.get(cid) or t.skills))
        if not names:
            raise TracesError(
                f"case {cid!r} names no SKILL and its trace was routed to none, so its rule "
                "graph is unknown; give the case 'skills' in the cases file"
            )
        missing = [n for n in names if n not in index.skills]
        if missing:
            raise TracesError(
                f"case {cid!r} uses SKILL(s) {', '.join(map(repr, missing))} that the index "
                "does not hold; pass the index the run was audited with (--index)"
            )
        if names not in memo:
            memo[names] = graph_complexity(index.skills[n] for n in names)
        correct = t.verdict is not None and t.verdict.violation == label_violation(label)
        session = (case.session if case is not None else "") or t.session or cid
        rows.append({
            "instance": cid,
            "dataset": str(dataset),
            "session": session,
            "params_b": float(params_b),
            "complexity": memo[names],
            "correct": int(correct),
            "label": label,
            "strategy": t.strategy,
            "judge_mode": t.judge_mode,
            "error": "" if t.verdict is not None else (t.error.kind if t.error else ErrorKind.NOT_JUDGED),
        })
    return rows


def outcomes_from_runs(
    runs: Sequence[tuple[Iterable[AuditTrace], float]],
    cases: Iterable[Any] | Mapping[str, Any],
    index: PolicyIndex,
    dataset: str,
    *,
    strategy: str | None = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of several judges' runs over the same cases: ``runs`` pairs each run's traces
    with its judge size in billions. One SKILL set per case across all runs, so an
    instance's complexity does not depend on which judge scored it. ``names`` (a file or run
    id per run) prefix the message of a :class:`TracesError` raised for that run."""
    labels = list(names) if names is not None else [""] * len(runs)
    by_id = _case_map(cases)
    chosen = []
    for label, (traces, _) in zip(labels, runs, strict=True):
        try:
            chosen.append(select_traces(traces, strategy))
        except TracesError as exc:
            raise _named(exc, label) from None
    skills = instance_skills([t for picked in chosen for t in picked], by_id)
    rows: list[dict[str, Any]] = []
    for label, picked, (_, size) in zip(labels, chosen, runs, strict=True):
        try:
            rows += outcomes_from_traces(picked, by_id, index, size, dataset, skills=skills)
        except TracesError as exc:
            raise _named(exc, label) from None
    return rows


def _named(exc: TracesError, label: str) -> TracesError:
    return TracesError(f"{label}: {exc}") if label else exc
