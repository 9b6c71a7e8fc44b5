"""Batch auditing: many cases, one strategy, each trace written through a sink
(``workbench.audit.sinks``: a JSONL file, standard output, the store) as it finishes.

Resumable: a case whose trace (same id, strategy, judge mode and keyword method) the sink
already holds is skipped, so an interrupted run continues where it stopped. A case whose
newest trace there failed for a passing reason (a model call error, an internal error) is
audited again unless ``retry_failed=False``; its new trace is appended after the old one and
the newest trace per key is the case's result (``latest_per_case``). Cases run
concurrently on worker threads (the gateway bounds calls per role); traces are written in
completion order, one complete JSON line each. Three consecutive failures that are about
the model endpoint rather than the case (no connection, embedded server unavailable, bad
key) stop the run with :class:`RunAborted` instead of failing every remaining case.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.sinks import JsonlFileSink, TraceSink, sink_done_keys
from workbench.audit.strategies import get_strategy
from workbench.audit.trace import AuditError, AuditTrace, run_key
from workbench.errors import WorkbenchError, is_fatal
from workbench.vocabulary import ErrorKind

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

INFRA_CAUSES = frozenset({"connection", "embedded_unavailable", "auth"})
ABORT_AFTER = 3


class RunAborted(WorkbenchError, RuntimeError):
    """The model endpoint is unusable; traces written so far are kept (re-run to resume)."""

    fatal = True


@dataclass
class RunSummary:
    total: int = 0
    skipped: int = 0
    retried: int = 0  # cases whose earlier trace failed and were audited again
    done: int = 0
    judged: int = 0
    errors: dict[str, int] = field(default_factory=dict)


def audit_one(case: AuditCase, index: AuditIndex, strat: Any, gateway: ModelGateway | None,
              opts: AuditOptions) -> AuditTrace:
    """One case through the pipeline, as every engine runs it: a failure of the case becomes
    an InternalError trace; a fatal one (the endpoint or configuration is unusable) raises."""
    try:
        return audit_case(case, index, strat, gateway, opts)
    except Exception as exc:
        if is_fatal(exc):  # about the setup, not the case: stop the run
            raise
        trace = AuditTrace(id=case.id, strategy=strat.name, session=case.session,
                           label=case.label, keywords_method=opts.keywords,
                           judge_mode=opts.judge_mode)
        trace.error = AuditError(ErrorKind.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        return trace


def plan_run(cases: Iterable[AuditCase], sink: TraceSink, strategy: str, opts: AuditOptions,
             retry_failed: bool, summary: RunSummary) -> list[AuditCase]:
    """The cases still to audit: not done in ``sink`` (a failed one counts as not done when
    ``retry_failed``), each id once; ``summary`` counts them (total, skipped, retried)."""
    done, earlier = sink_done_keys(sink, retry_failed)
    todo = []
    for case in cases:
        summary.total += 1
        key = run_key(case.id, strategy, opts.judge_mode, opts.keywords)
        if key in done:
            summary.skipped += 1
        else:
            todo.append(case)
            summary.retried += key in earlier
            done.add(key)  # a duplicate id in the input is audited once
    return todo


class _Writer:
    """Writes each finished trace through the sink (one at a time: workers finish on
    several threads), counts it, and records the abort after ``ABORT_AFTER`` endpoint
    failures in a row; the drivers stop taking cases once ``abort`` is set."""

    def __init__(self, sink: TraceSink, summary: RunSummary,
                 on_trace: Callable[[AuditTrace], None] | None):
        self.sink, self.summary, self.on_trace = sink, summary, on_trace
        self.lock = threading.Lock()
        self.streak = 0
        self.abort: RunAborted | None = None

    def __call__(self, trace: AuditTrace) -> None:
        with self.lock:
            self.sink.write(trace)
            self._count(trace)
        if self.on_trace is not None:
            self.on_trace(trace)

    def _count(self, trace: AuditTrace) -> None:
        summary = self.summary
        summary.done += 1
        summary.judged += trace.verdict is not None
        if trace.error is None:
            self.streak = 0
            return
        summary.errors[trace.error.kind] = summary.errors.get(trace.error.kind, 0) + 1
        self.streak = self.streak + 1 if trace.error.cause in INFRA_CAUSES else 0
        if self.streak >= ABORT_AFTER and self.abort is None:
            self.abort = RunAborted(
                f"{self.streak} cases in a row failed on the model endpoint ({trace.error.message}); "
                "fix the endpoint (`workbench model check`) and re-run the same command to "
                "resume"
            )


async def _drive_engine(engine: Any, todo: list[AuditCase], strategy: str, opts: AuditOptions,
                        write: _Writer) -> None:
    def drive() -> None:
        # closing: an engine shuts down what it started when its iterator ends, also
        # when a write fails or the run stops early
        with contextlib.closing(engine.audit(todo, strategy, opts)) as traces:
            for trace in traces:
                write(trace)
                if write.abort:
                    break

    await asyncio.to_thread(drive)


async def _drive_threads(todo: list[AuditCase], index: AuditIndex, strat: Any, gateway: ModelGateway | None,
                         opts: AuditOptions, concurrency: int, write: _Writer) -> None:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(case: AuditCase) -> None:
        async with sem:
            if write.abort:
                return
            write(await asyncio.to_thread(audit_one, case, index, strat, gateway, opts))

    tasks = [asyncio.create_task(one(c)) for c in todo]
    try:
        for fut in asyncio.as_completed(tasks):
            await fut
            if write.abort:
                break
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def arun_audit(
    cases: Iterable[AuditCase],
    index: AuditIndex,
    strategy: str,
    out: TraceSink | str | Path,
    gateway: ModelGateway | None = None,
    options: AuditOptions | None = None,
    concurrency: int = 2,
    on_trace: Callable[[AuditTrace], None] | None = None,
    retry_failed: bool = True,
    engine: Any = None,
) -> RunSummary:
    """Audit the cases not yet done in ``out``, writing one trace per case through it.

    ``out``: a :class:`~workbench.audit.sinks.TraceSink` (a path means a JSONL file sink);
    what it already holds decides what is done (``retry_failed``: a failed trace is retried).

    ``engine``: None runs cases on local threads (``concurrency`` at once); otherwise an
    object whose ``audit(cases, strategy, options)`` yields AuditTraces (e.g.
    ``audit.ray_engine.RayEngine``). Either way the same plan (what is done, what to retry)
    and the same writer apply, so output and resume behave identically.
    """
    opts = options or AuditOptions()
    strat = get_strategy(strategy, gateway)  # one instance: the dense encoder loads once
    sink = out if isinstance(out, TraceSink) else JsonlFileSink(out)
    summary = RunSummary()
    todo = plan_run(cases, sink, strat.name, opts, retry_failed, summary)
    write = _Writer(sink, summary, on_trace)
    if engine is not None:
        await _drive_engine(engine, todo, strat.name, opts, write)
    else:
        await _drive_threads(todo, index, strat, gateway, opts, concurrency, write)
    if write.abort:
        raise write.abort
    return summary


def run_audit(*args: Any, **kwargs: Any) -> RunSummary:
    """Synchronous wrapper of :func:`arun_audit` (for the CLI and scripts)."""
    return asyncio.run(arun_audit(*args, **kwargs))
