"""``Idempotency-Key`` on ``POST /v1/audit``: a client that retries a request whose answer
was lost (a timeout, a dropped connection) gets the first answer, and the request is stored
once.

- The trace id of a keyed request is derived from the key (:func:`idempotent_trace_id`), so
  every retry names the same trace; the key and a digest of the body are kept with the case
  (``extra["idempotency"]``), and so with the write-ahead entry
  (``workbench.api.write_ahead`` writes the case with the record, and a replay after a
  restart skips a trace id the database holds).
- A retry first looks the trace up in the store (which sees records still waiting in the
  write-ahead queue): found, it is answered from the stored trace without auditing again
  (``Idempotent-Replayed: true``). A retry arriving while the first is still auditing waits
  for it (one lock per key in this process).
- The same key with another body is refused (422), as the IETF draft on the header says: a
  key names one request.

Keys are 1 to 255 printable ASCII characters (e.g. a UUID); a request without one is audited
and stored as before.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from workbench.api.service import AuditService, RequestError, response_body
from workbench.identity.roles import Actor

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255


def idempotent_trace_id(key: str) -> str:
    """The trace id a request with Idempotency-Key ``key`` is stored under (the same for
    every retry)."""
    return "api-" + hashlib.sha256(f"idempotency-key\x1f{key}".encode()).hexdigest()[:32]


def body_digest(body: dict[str, Any]) -> str:
    """SHA-256 of the request as parsed (key order and spacing do not matter)."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_key(key: str) -> str:
    """``key`` when it is a usable Idempotency-Key; :class:`RequestError` otherwise."""
    if not 0 < len(key) <= MAX_KEY_CHARS or not all(" " < c <= "~" for c in key):
        raise RequestError(f"the {HEADER} header must be 1 to {MAX_KEY_CHARS} printable ASCII "
                           "characters without spaces", "send e.g. a UUID")
    return key


class Idempotent:
    """The audit service behind keyed requests (see the module doc)."""

    def __init__(self, service: AuditService):
        self.service = service
        self._lock = threading.Lock()
        self._held: dict[str, tuple[threading.Lock, int]] = {}

    def audit(self, body: dict[str, Any], key: str | None, *,
              actor: Actor) -> tuple[dict[str, Any], bool]:
        """(the response body, whether it was answered from a request stored before).
        Without a key, the service's plain audit."""
        if key is None:
            return self.service.audit(body, actor=actor), False
        trace_id = idempotent_trace_id(check_key(key))
        digest = body_digest(body)
        with self._holding(trace_id):  # a retry racing the first waits for it
            found = self.service.store.get(trace_id)
            if found is not None:
                case, trace = found
                extra = (case.extra if case is not None else None) or {}
                if (extra.get("idempotency") or {}).get("body_sha256") not in (None, digest):
                    raise RequestError(f"this {HEADER} was used with another request",
                                       "use a new key for a new request")
                return self._answer(trace), True
            case = self.service.case_of(body, trace_id)
            case.extra["idempotency"] = {"key": key, "body_sha256": digest}
            return self.service.audit(body, actor=actor, case=case), False

    def _answer(self, trace: Any) -> dict[str, Any]:
        setting = getattr(self.service, "decision_setting", None)  # the served dataset's, if any
        return response_body(trace, self.service.index, *((setting(),) if callable(setting) else ()))

    @contextmanager
    def _holding(self, key: str) -> Iterator[None]:
        """One lock per key while some request holds it (dropped when none does)."""
        with self._lock:
            lock, users = self._held.get(key) or (threading.Lock(), 0)
            self._held[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._held[key]
                if users <= 1:
                    del self._held[key]
                else:
                    self._held[key] = (lock, users - 1)
