"""Delivering alerts: a durable outbox (``store.alerts.SqlOutbox``, one row per alert) drained
by a background thread that posts each alert's JSON to its rule's webhook.

A post that fails (connection refused, timeout, an answer other than 2xx) is tried again
after :func:`backoff_s` (1 s, 2 s, 4 s ... capped at 5 minutes) up to ``MAX_ATTEMPTS`` times;
the attempt count, the next time and the last error are written to the outbox before the
wait, so a process that stops keeps its place and the next one (another batch, the API,
``workbench alerts deliver``) carries on. An alert is marked delivered only after a 2xx, so
it can be posted twice only if the process dies between the answer and that write; the
payload carries the alert id for a receiver that must deduplicate.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from workbench.clock import utcnow
from workbench.llm.redact import redact_text

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
POST_TIMEOUT_S = 5.0
BASE_BACKOFF_S = 1.0
MAX_BACKOFF_S = 300.0


@dataclass(frozen=True)
class Pending:
    id: int
    url: str
    payload: dict[str, Any]
    attempts: int


class Outbox(Protocol):
    def due(self, now: datetime) -> list[Pending]:
        """Undelivered alerts whose next attempt is due (oldest first)."""
        ...

    def next_due(self) -> datetime | None:
        """When the soonest undelivered alert is due; None when none waits."""
        ...

    def delivered(self, alert_id: int) -> None: ...

    def failed(self, alert_id: int, error: str, retry_at: datetime | None) -> None:
        """One attempt failed; ``retry_at`` None: give up (attempts spent)."""
        ...


def backoff_s(attempts: int) -> float:
    """Seconds before the next try after ``attempts`` failed ones: 1, 2, 4, ... <= 300."""
    return min(MAX_BACKOFF_S, BASE_BACKOFF_S * 2 ** max(0, attempts - 1))


def post_json(url: str, payload: dict[str, Any], timeout: float = POST_TIMEOUT_S) -> None:
    """POST ``payload`` as JSON; raises ``OSError`` (``urllib.error.URLError``/``HTTPError``)
    unless the answer is 2xx."""
    data = json.dumps(payload, ensure_ascii=False).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "User-Agent": "skillcdg-workbench-alerts"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (http(s) checked)
        if not 200 <= answer.status < 300:
            raise urllib.error.HTTPError(url, answer.status, "not 2xx", answer.headers, None)


Post = Callable[[str, dict[str, Any]], None]


def deliver_due(outbox: Outbox, post: Post = post_json, now: datetime | None = None) -> int:
    """One pass: post every due alert once. Returns how many were delivered."""
    done = 0
    for item in outbox.due(now or utcnow()):
        try:
            post(item.url, {**item.payload, "alert_id": item.id})
        except Exception as exc:  # any failure of one post is that alert's, retried later
            attempts = item.attempts + 1
            retry = (utcnow() + timedelta(seconds=backoff_s(attempts))
                     if attempts < MAX_ATTEMPTS else None)
            outbox.failed(item.id, redact_text(f"{type(exc).__name__}: {exc}")[:300], retry)
        else:
            outbox.delivered(item.id)
            done += 1
    return done


class Deliverer:
    """A daemon thread draining ``outbox``: woken by :meth:`wake` (new alerts) or when the
    soonest retry is due. ``wait_idle`` lets a short-lived process (a batch command) give
    its alerts a bounded moment before it exits; what is left stays in the outbox."""

    def __init__(self, outbox: Outbox, post: Post = post_json, *, poll_s: float = 30.0):
        self.outbox, self.post, self.poll_s = outbox, post, poll_s
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

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no alert waits to be delivered, retries included (or ``timeout``);
        True when none waits."""
        return self._idle.wait(timeout)

    def _loop(self) -> None:
        while not self._stop:
            self._wake.clear()
            try:
                deliver_due(self.outbox, self.post)
                soonest = self.outbox.next_due()
            except Exception:  # the database went away for a moment: try again later
                log.exception("alert delivery pass failed")
                soonest = None
            now = utcnow()
            if soonest is None:
                self._idle.set()
            wait = self.poll_s if soonest is None else max(0.05, (soonest - now).total_seconds())
            self._wake.wait(min(wait, self.poll_s))
