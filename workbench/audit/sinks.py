"""Where a batch run writes its traces: the one writer path per result kind.

A sink takes each trace as it finishes (``write``) and knows what it already holds
(``traces``), so a resumed run asks the sink which cases are done (``done_keys``): the same
rule whether the traces go to a JSONL file, to standard output or to the store
(``store.audit_repo.StoreSink``; the store is not importable from here).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

from workbench.audit.trace import AuditTrace, TraceKey, done_keys, trace_key
from workbench.audit.trace_file import encode_trace, read_traces


@runtime_checkable
class TraceSink(Protocol):
    def traces(self) -> list[AuditTrace]:
        """Traces already written, oldest first (what a resumed run builds on)."""
        ...

    def write(self, trace: AuditTrace) -> None:
        """Keep one finished trace (called under the runner's lock, one at a time)."""
        ...


def sink_done_keys(sink: TraceSink, retry_failed: bool = True) -> tuple[set[TraceKey], set[TraceKey]]:
    """``(done, earlier)``: keys a resumed run skips (a failed one is retried unless
    ``retry_failed`` is false) and every key the sink holds a trace for."""
    held = sink.traces()
    return done_keys(held, retry_failed), {trace_key(t) for t in held}


class JsonlFileSink:
    """Appends one JSON line per trace to a file (the ``--out`` of ``workbench audit``)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._end_with_newline()

    def traces(self) -> list[AuditTrace]:
        return read_traces(self.path)[0]

    def write(self, trace: AuditTrace) -> None:
        line = encode_trace(trace)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _end_with_newline(self) -> None:
        """After a crash mid-write the file may end in half a line: close it, so the next
        trace starts on its own line (the half line is then skipped as damaged)."""
        if self.path.is_file() and self.path.stat().st_size:
            with open(self.path, "rb") as f:
                f.seek(-1, 2)
                last = f.read(1)
            if last != b"\n":
                with open(self.path, "ab") as f:
                    f.write(b"\n")


class StdoutSink:
    """Writes each trace as a JSON line to a stream (standard output by default), flushed at
    once so a pipe sees it. Holds nothing to resume from."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream

    def traces(self) -> list[AuditTrace]:
        return []

    def write(self, trace: AuditTrace) -> None:
        stream = self.stream or sys.stdout  # looked up late: tests swap sys.stdout
        stream.write(encode_trace(trace) + "\n")
        stream.flush()


class TeeSink:
    """Writes to every sink; resumes from the first (e.g. stdout plus the store)."""

    def __init__(self, primary: TraceSink, *mirrors: TraceSink):
        self.sinks = (primary, *mirrors)

    def traces(self) -> list[AuditTrace]:
        return self.sinks[0].traces()

    def write(self, trace: AuditTrace) -> None:
        for sink in self.sinks:
            sink.write(trace)
