"""One batch audit, the same for ``workbench audit`` and the Review page's Audit button.

A face (the command line, a page) says which cases, which strategy and options, where the
traces go (a sink, ``workbench.audit.sinks``) and how progress is shown; :class:`AuditBatch`
does the rest one way for both:

- the judge's window is worked out once for the run (:meth:`AuditBatch.configure`), not
  again for every case, and also without a judge, so the traces show how each case would
  fit (the pipeline then caps the seeds' target by the judge's room);
- whether the run calls the model (:attr:`AuditBatch.needs_model`: LLM keywords, a judge,
  or a strategy that indexes with the model), so the face makes a gateway only then;
- how many cases the sink does not hold yet (:meth:`AuditBatch.pending`);
- the run itself (:meth:`AuditBatch.run`, through ``runner.run_audit``: resumable,
  concurrent, stopping on a broken endpoint with ``RunAborted``).

    batch = AuditBatch.configure("cdg", AuditOptions(judge_mode="whole"))
    gateway = make_gateway() if batch.needs_model else None
    summary = batch.run(cases, AuditIndex(index), JsonlFileSink("traces.jsonl"), gateway)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from workbench.alerts.hooks import audited
from workbench.audit.cases import AuditCase
from workbench.audit.pipeline import AuditOptions
from workbench.audit.policy import AuditIndex
from workbench.audit.runner import RunSummary, plan_run, run_audit
from workbench.audit.sinks import TraceSink
from workbench.audit.strategies import needs_gateway
from workbench.audit.trace import AuditTrace
from workbench.audit.window import configured_window
from workbench.vocabulary import JudgeMode, KeywordMethod

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway


@dataclass(frozen=True)
class AuditBatch:
    """One strategy and one set of options applied to many cases (make it with
    :meth:`configure`, which settles the judge's window)."""

    strategy: str
    options: AuditOptions
    retry_failed: bool = True  # a case whose newest trace failed on a passing error: again

    @classmethod
    def configure(cls, strategy: str, options: AuditOptions,
                  retry_failed: bool = True) -> AuditBatch:
        """The batch with the judge's window worked out: ``options.window`` when given, else
        the configured judge's (:func:`~workbench.audit.window.configured_window`; None when
        nothing says, and the cases are then not fitted)."""
        if options.window is None:
            options = replace(options, window=configured_window())
        return cls(strategy, options, retry_failed)

    @property
    def needs_model(self) -> bool:
        """Whether the run calls the model: LLM keywords, a judge, or a strategy that builds
        its contexts with the model (LightRAG indexes even without a judge)."""
        o = self.options
        return (o.keywords == KeywordMethod.LLM or o.judge_mode != JudgeMode.NONE
                or needs_gateway(self.strategy))

    def pending(self, cases: Sequence[AuditCase], sink: TraceSink) -> int:
        """How many of ``cases`` a run would audit: those ``sink`` holds no finished trace
        of, each id once (what :meth:`run` skips is the rest)."""
        return len(plan_run(cases, sink, self.strategy, self.options, self.retry_failed,
                            RunSummary()))

    def run(self, cases: Iterable[AuditCase], index: AuditIndex, sink: TraceSink,
            gateway: ModelGateway | None = None, *, concurrency: int = 2,
            on_trace: Callable[[AuditTrace], None] | None = None,
            engine: Any = None) -> RunSummary:
        """Audit the pending cases, each trace written through ``sink`` as it finishes and
        then handed to ``on_trace``. ``gateway``: needed when :attr:`needs_model` (the caller
        owns it: this does not close it). ``engine``: None for local threads
        (``concurrency`` at once), else e.g. a ``RayEngine``. Raises ``RunAborted`` after
        repeated endpoint failures (the traces so far are kept). The traces written are
        then checked against the alert rules (``workbench.alerts.audited``; never raises)."""
        written: list[AuditTrace] = []

        def keep(trace: AuditTrace) -> None:
            written.append(trace)
            if on_trace is not None:
                on_trace(trace)

        try:
            return run_audit(cases, index, self.strategy, sink, gateway, self.options,
                             concurrency=concurrency, on_trace=keep,
                             retry_failed=self.retry_failed, engine=engine)
        finally:
            audited(written, sink)
