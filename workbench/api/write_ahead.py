"""The API's write-ahead queue: a request's case and trace are appended to a log file and
fsynced before the answer goes out, and a writer thread stores them in the database after.

Why: committing a case and its trace to the store (``StoreTraces``: SQLite under WAL with
``synchronous=FULL``, one transaction per request) cost about 9 ms of the API's 17 ms median
overhead (``bench/api.py``), on the request path. An append to a file plus an ``fsync`` is
cheaper, and concurrent requests share one fsync (group commit: the appender thread writes
every record waiting, fsyncs once, then releases them all). Durability is unchanged: a
request is answered only after its record is on disk, so a server killed (even ``kill -9``)
after answering loses nothing; the next start replays every record the database does not
hold yet (checked by trace id, so a record stored just before the kill is not stored twice),
before serving. A record torn by the kill was never answered, and is skipped. A request sent
with an ``Idempotency-Key`` has its key (and its body's digest) in its case's
``extra["idempotency"]``, so the entry carries it, and its trace id comes from the key
(``workbench.api.idempotency``): a client retrying it after the answer was lost finds it here
(:meth:`WriteAheadStore.get`) or in the database, and it is stored once.

Layout of ``directory`` (one per database, dataset and run: ``queue_dir``): segments
``wal-<start>-<n>.jsonl`` (one JSON object per line: the actor, the case, the trace), and
``checkpoint.json`` (the segment and byte offset up to which everything is stored). A new
segment is opened at each start and past ``SEGMENT_BYTES``; a segment is deleted once the
writer has stored all of it. ``GET /v1/traces/{id}`` sees a trace still waiting for the
writer (:meth:`WriteAheadStore.get`). One server per directory (an ``flock``).

After the writer stores a batch it checks the alert rules on it (``workbench.alerts``), off
the request path too.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.alerts.hooks import audited
from workbench.audit.cases import AuditCase, case_from_dict
from workbench.audit.trace import AuditTrace
from workbench.errors import WorkbenchError
from workbench.identity.roles import Actor, NotAllowed, require

log = logging.getLogger(__name__)

SEGMENT_BYTES = 64 * 1024 * 1024
WRITER_BATCH = 64
SAVE_ACTIONS = ("import cases", "store audit results")  # what the inner store checks


class WriteAheadError(WorkbenchError, OSError):
    """The queue directory cannot be used; the message says why and what to do."""

    fatal = True


def queue_dir(base: str | os.PathLike[str], store: Any) -> Path:
    """The queue of ``store``'s database, dataset and run under ``base`` (two APIs on two
    databases never replay into each other's)."""
    engine = getattr(store, "engine", None)
    identity = "|".join(str(x) for x in (getattr(engine, "url", type(store).__name__),
                                         getattr(store, "dataset", ""), getattr(store, "run_id", "")))
    return Path(base) / hashlib.sha256(identity.encode()).hexdigest()[:16]


@dataclass
class _Record:
    case: AuditCase
    trace: AuditTrace
    actor: Actor
    line: bytes
    done: threading.Event
    segment: str = ""
    end: int = 0
    error: BaseException | None = None


class WriteAheadStore:
    """A ``TraceStore`` in front of ``inner`` (see the module doc). ``save`` returns once the
    record is fsynced; ``close`` stores what is left and stops the threads."""

    checks_alerts = True  # the writer runs the alert rules after storing

    def __init__(self, inner: Any, directory: str | os.PathLike[str], *,
                 on_stored: Callable[[list[AuditTrace], Any], None] = audited):
        self.inner, self.on_stored = inner, on_stored
        self.engine = None  # not a store sink itself: the alert hook reads ``inner``
        self.dir = Path(directory)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock_file = open(self.dir / "lock", "a+b")  # noqa: SIM115 (held until close)
        except OSError as exc:
            raise WriteAheadError(f"the API's write-ahead queue {self.dir} cannot be used "
                                  f"({exc.strerror})",
                                  "point [api] write_ahead at a writable directory, or set it "
                                  "to \"\" to store each request before answering") from None
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WriteAheadError(f"another audit API uses the write-ahead queue {self.dir}",
                                  "stop it, or serve another dataset/run_id") from None
        self.replayed = self._replay()
        self._pending: dict[str, tuple[AuditCase, AuditTrace]] = {}
        self._pending_lock = threading.Lock()
        self._incoming: list[_Record] = []
        self._incoming_cv = threading.Condition()
        self._stored: queue.Queue[_Record | str | None] = queue.Queue()
        self._start = f"{time.time_ns():020d}"
        self._n = 0
        self._open_segment()
        self._closed = False
        self._appender = threading.Thread(target=self._append_loop, name="api-wal-append",
                                          daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="api-wal-store", daemon=True)
        self._appender.start()
        self._writer.start()

    # -- the request path ---------------------------------------------------------------------

    def save(self, case: AuditCase, trace: AuditTrace, *, actor: Actor) -> None:
        for action in SAVE_ACTIONS:  # refused now, not later in the writer
            require(actor, action)
        line = json.dumps({"actor": [actor.name, actor.role], "case": case.to_dict(),
                           "trace": trace.to_dict()}, ensure_ascii=False).encode() + b"\n"
        record = _Record(case, trace, actor, line, threading.Event())
        with self._pending_lock:
            self._pending[trace.id] = (case, trace)
        with self._incoming_cv:
            if self._closed:
                raise WriteAheadError("the audit API is stopping", "retry in a moment")
            self._incoming.append(record)
            self._incoming_cv.notify()
        record.done.wait()
        if record.error is not None:
            with self._pending_lock:
                self._pending.pop(trace.id, None)
            raise WriteAheadError(f"the request could not be written ahead ({record.error})",
                                  "check the disk of [api] write_ahead; retry")

    def get(self, trace_id: str) -> tuple[AuditCase | None, AuditTrace] | None:
        with self._pending_lock:
            found = self._pending.get(trace_id)
        return found if found is not None else self.inner.get(trace_id)

    def waiting(self) -> int:
        """Records answered but not yet in the database."""
        with self._pending_lock:
            return len(self._pending)

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking requests, store what waits (up to ``timeout``), stop the threads."""
        with self._incoming_cv:
            if self._closed:
                return
            self._closed = True
            self._incoming_cv.notify()
        self._appender.join(timeout)
        self._stored.put(None)
        self._writer.join(timeout)
        self._file.close()
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()

    # -- appending (group commit) -------------------------------------------------------------

    def _open_segment(self) -> None:
        self._n += 1
        self._segment = f"wal-{self._start}-{self._n:06d}.jsonl"
        self._file = open(self.dir / self._segment, "ab", buffering=0)  # noqa: SIM115
        self._size = 0
        _fsync_dir(self.dir)

    def _append_loop(self) -> None:
        while True:
            with self._incoming_cv:
                while not self._incoming and not self._closed:
                    self._incoming_cv.wait()
                batch, self._incoming = self._incoming, []
                if not batch and self._closed:
                    return
            try:
                self._file.write(b"".join(r.line for r in batch))
                os.fsync(self._file.fileno())
            except OSError as exc:  # each waiting request answers an error; none is lost
                for r in batch:
                    r.error = exc
                    r.done.set()
                continue
            for r in batch:
                self._size += len(r.line)
                r.segment, r.end = self._segment, self._size
                self._stored.put(r)
                r.done.set()
            if self._size >= SEGMENT_BYTES:
                old = self._segment
                self._file.close()
                self._open_segment()
                self._stored.put(old)  # after its last record: the writer deletes it

    # -- storing ------------------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            item = self._stored.get()
            batch = [item]
            while len(batch) < WRITER_BATCH:
                try:
                    batch.append(self._stored.get_nowait())
                except queue.Empty:
                    break
            records = [b for b in batch if isinstance(b, _Record)]
            for r in records:
                self._store(r.case, r.trace, r.actor)
            if records:
                last = records[-1]
                self._checkpoint(last.segment, last.end)
                with self._pending_lock:
                    for r in records:
                        self._pending.pop(r.trace.id, None)
                self.on_stored([r.trace for r in records], self.inner)
            for b in batch:
                if isinstance(b, str):
                    (self.dir / b).unlink(missing_ok=True)
            if None in batch:
                return

    def _store(self, case: AuditCase, trace: AuditTrace, actor: Actor) -> None:
        """Store one record, again after a pause while the database refuses (locked, gone):
        the record stays in the log until it is stored."""
        pause = 0.05
        while True:
            try:
                self.inner.save(case, trace, actor=actor)
                return
            except NotAllowed:
                log.error("write-ahead record %s refused by the store's role check; skipped", trace.id)
                return
            except Exception:
                log.exception("storing write-ahead record %s failed; retrying", trace.id)
                time.sleep(pause)
                pause = min(5.0, pause * 2)

    def _checkpoint(self, segment: str, offset: int) -> None:
        tmp = self.dir / "checkpoint.json.tmp"
        tmp.write_text(json.dumps({"segment": segment, "offset": offset}))
        os.replace(tmp, self.dir / "checkpoint.json")  # atomic; a lost one only replays more

    # -- start-up ------------------------------------------------------------------------------

    def _replay(self) -> int:
        """Store every logged record the database lacks; delete the segments. Returns how
        many were stored."""
        mark: dict[str, Any] = {}
        try:
            mark = json.loads((self.dir / "checkpoint.json").read_text())
        except (OSError, ValueError):
            pass
        stored = 0
        for path in sorted(self.dir.glob("wal-*.jsonl")):
            skip = int(mark.get("offset", 0)) if path.name == mark.get("segment") else 0
            with open(path, "rb") as f:
                f.seek(skip)
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # torn by a kill before its fsync returned: never answered
                    try:
                        data = json.loads(line)
                        case = case_from_dict(data["case"])
                        trace = AuditTrace.from_dict(data["trace"])
                        actor = Actor(*data["actor"])
                    except (ValueError, KeyError, TypeError):
                        log.error("unreadable write-ahead record in %s; skipped", path.name)
                        continue
                    if self.inner.get(trace.id) is None:
                        self._store(case, trace, actor)
                        stored += 1
            path.unlink()
        (self.dir / "checkpoint.json").unlink(missing_ok=True)
        if stored:
            log.warning("stored %d audit requests answered before the last stop", stored)
        return stored


def _fsync_dir(directory: Path) -> None:
    """Make a new file's name durable (its directory entry), not only its bytes."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
