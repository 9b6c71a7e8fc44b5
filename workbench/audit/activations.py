"""Capture the judge's activations for the cases of a run (``workbench features capture``).

For each trace the judging prompt is rebuilt exactly as the whole-context judge sends it
(``judge_messages(case, trace.context)``), read once by an :class:`ActivationReader` and kept
in the run's features folder (``workbench.decision.features``) under the case id, the
strategy and the prompt's sha256. Cases already captured for the same prompt are skipped,
so an interrupted capture resumes. Traces without a context (an error before the judge) are
passed over and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench.audit.cases import AuditCase
from workbench.audit.judge import judge_messages
from workbench.audit.trace import AuditTrace
from workbench.decision import features as ff


@dataclass
class CaptureSummary:
    captured: int = 0
    already: int = 0
    no_context: list[str] = field(default_factory=list)
    no_case: list[str] = field(default_factory=list)
    seconds: float = 0.0
    prompt_tokens: int = 0


def capture_run(traces: Sequence[AuditTrace], cases: dict[str, AuditCase], folder: Path,
                reader, *, limit: int | None = None,
                progress: Callable[[str], None] | None = None) -> CaptureSummary:
    """Capture the features of ``traces`` (in their order) into ``folder``. A case captured
    before for the same prompt is read again only when its record lacks features this reader
    reads (a capture of an older build kept the last prompt token only, and the built-in
    scorer reads the reply's poolings); the new record replaces the old (last line wins)."""
    wanted = set(getattr(reader, "feature_ids", ()))
    done = {(r.case_id, r.strategy, r.prompt_sha256) for r in ff.read_index(folder)
            if wanted <= set(r.layers)}
    summary = CaptureSummary()
    for trace in traces:
        if limit is not None and summary.captured >= limit:
            break
        case = cases.get(trace.id)
        if case is None:
            summary.no_case.append(trace.id)
            continue
        if not trace.context:
            summary.no_context.append(trace.id)
            continue
        messages = judge_messages(case, trace.context)
        sha = ff.prompt_sha(messages)
        if (trace.id, trace.strategy, sha) in done:
            summary.already += 1
            continue
        got = reader.capture(messages)
        rec = ff.new_record(trace.id, trace.strategy, sha, reader.source, got.layers,
                            got.prompt_tokens, got.seconds)
        ff.append(folder, rec, got.array)
        done.add((trace.id, trace.strategy, sha))
        summary.captured += 1
        summary.seconds += got.seconds
        summary.prompt_tokens += got.prompt_tokens
        if progress:
            progress(f"{trace.id}: {got.prompt_tokens} prompt tokens, {got.seconds:.1f} s")
    return summary


class FeatureWriter:
    """Keeps each finished trace's activations beside the run while the audit goes on
    (``workbench audit`` calls it with every trace). The reading made during the judge's own
    call is taken from ``onepass`` (``workbench.llm.onepass``); a trace whose answer came from
    the response cache (or a judge mode whose prompt is not the whole-context one) is read
    here without an answer. Cases already in ``folder`` for the same prompt are skipped, so a
    resumed audit resumes its features too. Safe to call from the runner's threads."""

    def __init__(self, folder: Path, cases: dict[str, AuditCase], onepass,
                 progress: Callable[[str], None] | None = None) -> None:
        import threading

        self.folder = Path(folder)
        self.cases = cases
        self.onepass = onepass
        self.progress = progress
        self.summary = CaptureSummary()
        self.from_judge = 0  # readings made during the judge's own call
        self.failed: list[str] = []  # cases whose prompt could not be read (named, why)
        self._done = {(r.case_id, r.strategy, r.prompt_sha256) for r in ff.read_index(self.folder)}
        self._lock = threading.Lock()

    def __call__(self, trace: AuditTrace) -> None:
        case = self.cases.get(trace.id)
        if case is None or not trace.context:
            return
        messages = judge_messages(case, trace.context)
        sha = ff.prompt_sha(messages)
        key = (trace.id, trace.strategy, sha)
        reading = self.onepass.take(messages)
        with self._lock:
            if key in self._done:
                return
        in_pass = reading is not None
        if reading is None:
            try:
                reading = self.onepass.reader().read(messages)
            except Exception as exc:  # activations are an extra: the trace stands without
                self.failed.append(f"{trace.id}: {exc}")
                return
        rec = ff.new_record(trace.id, trace.strategy, sha, self.onepass.source, reading.features,
                            reading.prompt_tokens, reading.seconds)
        with self._lock:
            if key in self._done:
                return
            ff.append(self.folder, rec, reading.array)
            self._done.add(key)
            self.summary.captured += 1
            self.summary.seconds += reading.seconds
            self.summary.prompt_tokens += reading.prompt_tokens
            self.from_judge += in_pass
        if self.progress:
            how = "in the judge's own pass" if in_pass else f"read in {reading.seconds:.0f} s"
            self.progress(f"{trace.id}: activations of {reading.prompt_tokens} prompt tokens ({how})")
