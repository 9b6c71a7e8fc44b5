"""Delivering alerts: a durable outbox (``store.alerts.SqlOutbox``, one row per alert) drained
by a dispatcher thread and a small pool of posting workers, at most one per destination.

- **One slow receiver delays no other.** Alerts are grouped by destination
  (``scheme://host:port``); each group is posted by one worker of a pool of ``WORKERS``, and
  a destination is never given a second worker while one posts to it. Each post has a total
  deadline of ``POST_DEADLINE_S`` (``workbench.alerts.outbound``), so a receiver that hangs
  or answers one byte every few seconds holds one worker for at most that long per try.
- **Retries back off per destination, not per alert.** A failed post stops that
  destination's group and the outbox holds the whole destination back for
  :func:`backoff_s` of its consecutive failures (1 s, 2 s, 4 s ... capped at 5 minutes); a
  delivered post resets it. A receiver answering 500 gets one post per backoff period, not
  one per waiting alert. An alert is given up (``failed``) after ``MAX_ATTEMPTS`` tries of
  its own.
- **Durable.** Attempts, the destination's next try and the last error are written to the
  outbox before the next post, so a process that stops keeps its place and the next one
  (another batch, the API, ``workbench alerts deliver``) carries on. An alert is marked
  delivered only after a 2xx; it can be posted twice only if the process dies between the
  answer and that write, and the payload carries the alert id for a receiver that must
  deduplicate.
- **Credentials** come from the environment variable (or ``.streamlit/secrets.toml`` key)
  the rule names (``auth_env``) and go in the ``Authorization`` header, to that rule's
  receiver only: its value as given (``Bearer abc``, ``Basic dXNlcjpwdw==``), a bare token
  as ``Bearer <token>``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from workbench.alerts import outbound
from workbench.alerts.destinations import OutboundError, check_url, secret_value
from workbench.clock import utcnow
from workbench.llm.redact import redact_text

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8  # tries of one alert before it is given up
POST_DEADLINE_S = 5.0  # one post, all of it: connect, send, answer
BASE_BACKOFF_S = 1.0
MAX_BACKOFF_S = 300.0
WORKERS = 4  # posts at once (each to another destination)
PER_PASS = 20  # alerts of one rule handed to a worker at a time


@dataclass(frozen=True)
class Pending:
    """An alert waiting to be posted to ``url`` (its rule's webhook now)."""

    id: int
    url: str
    payload: dict[str, Any]
    attempts: int
    auth_env: str = ""
    destination: str = field(default="")

    def __post_init__(self) -> None:
        if not self.destination:
            object.__setattr__(self, "destination", destination_key(self.url))


def destination_key(url: str) -> str:
    """``scheme://host:port`` of ``url``, what retries back off by; the address itself when
    it cannot be parsed (its posts then fail with the reason)."""
    try:
        return check_url(url).key
    except OutboundError:
        return url


class Outbox(Protocol):
    def due(self, now: datetime) -> list[Pending]:
        """Undelivered alerts of rules not paused, whose destination is not held back,
        oldest first (at most ``PER_PASS`` per rule)."""
        ...

    def next_due(self, exclude: Sequence[str] = ()) -> datetime | None:
        """When an undelivered alert of a destination not in ``exclude`` may next be tried;
        None when none waits."""
        ...

    def delivered(self, alert_id: int, destination: str) -> None:
        """The alert was delivered: close it (its payload is pruned) and clear the
        destination's failures."""
        ...

    def failed(self, alert_id: int, destination: str, error: str, give_up: bool) -> None:
        """One attempt failed: count it on the alert (``give_up``: close it as failed) and
        hold the destination back for :func:`backoff_s` of its consecutive failures."""
        ...


def backoff_s(failures: int) -> float:
    """Seconds a destination waits after ``failures`` consecutive failed posts: 1, 2, 4, ...
    <= 300."""
    return min(MAX_BACKOFF_S, BASE_BACKOFF_S * 2 ** max(0, failures - 1))


def authorization(auth_env: str) -> dict[str, str]:
    """The ``Authorization`` header of a rule whose credential is in ``auth_env`` (none when
    it names none); :class:`OutboundError` when the variable is not set."""
    if not auth_env:
        return {}
    value = secret_value(auth_env)
    if not value:
        raise OutboundError(f"the webhook's credential variable {auth_env} is not set",
                            f"set {auth_env} in the environment or .streamlit/secrets.toml "
                            "(e.g. 'Bearer <token>')")
    return {"Authorization": value.strip() if " " in value.strip() else f"Bearer {value.strip()}"}


def post_alert(item: Pending) -> None:
    """POST ``item``'s payload (with its ``alert_id``) as JSON through the outbound client;
    raises :class:`OutboundError` unless the receiver answered 2xx in time."""
    outbound.post_json(item.url, {**item.payload, "alert_id": item.id},
                       authorization(item.auth_env), deadline_s=POST_DEADLINE_S, what="webhook")


Post = Callable[[Pending], None]


@dataclass
class Pass:
    """What one delivery pass did."""

    delivered: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


def deliver_to(outbox: Outbox, items: Sequence[Pending], post: Post = post_alert) -> Pass:
    """Post ``items`` (one destination's) in order until one fails; the rest wait for the
    destination's backoff."""
    done = Pass()
    for item in items:
        try:
            post(item)
        except Exception as exc:  # any failure of one post is the destination's, retried later
            error = redact_text(str(exc) if isinstance(exc, OutboundError) else
                                f"{type(exc).__name__}: {exc}")[:300]
            give_up = item.attempts + 1 >= MAX_ATTEMPTS
            outbox.failed(item.id, item.destination, error, give_up)
            done.failed += 1
            done.errors.append(error)
            break
        outbox.delivered(item.id, item.destination)
        done.delivered += 1
    return done


def by_destination(items: Sequence[Pending]) -> dict[str, list[Pending]]:
    groups: dict[str, list[Pending]] = {}
    for item in items:
        groups.setdefault(item.destination, []).append(item)
    return groups


def deliver_due(outbox: Outbox, post: Post = post_alert, now: datetime | None = None,
                workers: int = WORKERS) -> Pass:
    """One pass: every destination with due alerts gets one worker (``workers`` at once);
    returns how many were delivered and how many posts failed."""
    groups = by_destination(outbox.due(now or utcnow()))
    total = Pass()
    if not groups:
        return total
    with ThreadPoolExecutor(min(workers, len(groups)), thread_name_prefix="alert-post") as pool:
        for one in pool.map(lambda g: deliver_to(outbox, g, post), groups.values()):
            total.delivered += one.delivered
            total.failed += one.failed
            total.errors += one.errors
    return total


class Deliverer:
    """A daemon dispatcher draining ``outbox`` through ``workers`` posting threads, one
    destination per thread at a time: woken by :meth:`wake` (new alerts), by a worker that
    finished, or when the soonest held-back destination may be tried again. ``wait_idle``
    lets a short-lived process (a batch command) give its alerts a bounded moment before it
    exits; what is left stays in the outbox."""

    def __init__(self, outbox: Outbox, post: Post = post_alert, *, poll_s: float = 30.0,
                 workers: int = WORKERS):
        self.outbox, self.post, self.poll_s = outbox, post, poll_s
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="alert-post")
        self._busy: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="alert-delivery", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._idle.clear()
        self._wake.set()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no alert waits to be delivered, retries included (or ``timeout``);
        True when none waits."""
        return self._idle.wait(timeout)

    def _loop(self) -> None:
        while not self._stop:
            self._wake.clear()
            try:
                self._dispatch()
                with self._lock:
                    busy = set(self._busy)
                soonest = self.outbox.next_due(tuple(busy))
            except Exception:  # the database went away for a moment: try again later
                log.exception("alert delivery pass failed")
                soonest, busy = None, set()
            now = utcnow()
            if soonest is None and not busy:
                self._idle.set()
            wait = self.poll_s if soonest is None else max(0.05, (soonest - now).total_seconds())
            self._wake.wait(min(wait, self.poll_s))

    def _dispatch(self) -> None:
        for destination, items in by_destination(self.outbox.due(utcnow())).items():
            with self._lock:
                if destination in self._busy:
                    continue
                self._busy.add(destination)
            self._pool.submit(self._work, destination, items)

    def _work(self, destination: str, items: list[Pending]) -> None:
        try:
            deliver_to(self.outbox, items, self.post)
        except Exception:  # the outbox's bookkeeping failed: the alerts stay pending
            log.exception("alert delivery to %s failed", destination)
        finally:
            with self._lock:
                self._busy.discard(destination)
            self._wake.set()
