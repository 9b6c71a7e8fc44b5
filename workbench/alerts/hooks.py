"""Where alert rules are checked: ``audited(traces, where)`` after traces are stored.

The batch runner (``workbench.audit.batch``) calls it with its sink when a batch ends; the
audit API calls it with its trace store when its writer has committed requests. ``where``
says where the traces went (a store sink has ``engine`` and ``dataset``); the core does not
know the store, so the store registers its checker with :func:`on_audited` when it is
imported (``store.alerts``). A checker that fails is logged, never raised: an alert must not
fail or hold up the audit that fed it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from workbench.audit.trace import AuditTrace

log = logging.getLogger(__name__)

Checker = Callable[[Sequence[AuditTrace], Any], None]
_CHECKERS: list[Checker] = []


def on_audited(checker: Checker) -> Checker:
    """Register ``checker(traces, where)`` (once, however often it is registered)."""
    if checker not in _CHECKERS:
        _CHECKERS.append(checker)
    return checker


def audited(traces: Sequence[AuditTrace], where: Any) -> None:
    """Tell every registered checker that ``traces`` were stored through ``where``."""
    if not traces:
        return
    for checker in list(_CHECKERS):
        try:
            checker(traces, where)
        except Exception:  # an alert never fails the audit; it is logged for the operator
            log.exception("alert check failed after %d traces", len(traces))
