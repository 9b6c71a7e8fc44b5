"""A per-case time limit on the audit's own work (everything but the model calls).

A batch must not stall on one hostile case (a 20,000-turn transcript, a giant state): the
runner gives each case ``time_limit_s`` seconds of pipeline time. Model calls do not count
(their time is the endpoint's, bounded by the role's ``timeout``): the pipeline tells the
deadline how long its calls took. Python cannot stop a thread, so the limit is checked at
step boundaries and inside the long loops (conversation fitting, part planning);
:class:`CaseTimeLimit` then ends the case with a ``TimeLimit`` error in its trace and the
batch goes on.

The limit is ``AuditOptions.time_limit_s``; None takes ``WORKBENCH_AUDIT_TIME_LIMIT``
(seconds, default 120; 0 turns the limit off).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from workbench.errors import WorkbenchError
from workbench.settings import AUDIT_TIME_LIMIT, SettingError, env_number
from workbench.vocabulary import ErrorKind

DEFAULT_TIME_LIMIT_S = 120.0


class CaseTimeLimit(WorkbenchError, TimeoutError):
    """The case used up its time limit; ``kind`` is the trace's error kind."""

    kind = ErrorKind.TIME_LIMIT


_clock = time.perf_counter  # a test can swap it for a fake clock


class Deadline:
    """``limit_s`` seconds from now, not counting what ``model_seconds()`` reports."""

    def __init__(self, limit_s: float, model_seconds: Callable[[], float] = lambda: 0.0):
        self.limit_s = limit_s
        self.start = _clock()
        self._model_seconds = model_seconds

    def spent(self) -> float:
        return _clock() - self.start - self._model_seconds()

    def check(self, where: str) -> None:
        spent = self.spent()
        if spent > self.limit_s:
            raise CaseTimeLimit(
                f"the case took more than its time limit of {self.limit_s:g} s of audit work "
                f"(model calls not counted): {spent:.1f} s, stopped while {where}",
                f"audit it alone with a larger limit ({AUDIT_TIME_LIMIT.name} or --time-limit "
                "SECONDS, 0 for none), or shorten the conversation or state",
            )


_current: ContextVar[Deadline | None] = ContextVar("audit_deadline", default=None)


def time_limit(configured: float | None) -> float:
    """The limit in seconds (0: none): ``configured``, else the environment's."""
    if configured is not None:
        if not configured >= 0:  # also NaN
            raise SettingError(f"a time limit of {configured} s is not possible",
                               "give 0 (no limit) or a positive number of seconds")
        return float(configured)
    return env_number(AUDIT_TIME_LIMIT.name, DEFAULT_TIME_LIMIT_S)


@contextlib.contextmanager
def case_deadline(limit_s: float | None,
                  model_seconds: Callable[[], float] = lambda: 0.0) -> Iterator[Deadline | None]:
    """Run the body under a deadline of ``time_limit(limit_s)`` (none when 0)."""
    seconds = time_limit(limit_s)
    deadline = Deadline(seconds, model_seconds) if seconds > 0 else None
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def check_deadline(where: str) -> None:
    """Raise CaseTimeLimit if the current case is past its limit (no-op without one)."""
    deadline = _current.get()
    if deadline is not None:
        deadline.check(where)
