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
    """Capture the features of ``traces`` (in their order) into ``folder``."""
    done = {(r.case_id, r.strategy, r.prompt_sha256) for r in ff.read_index(folder)}
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
