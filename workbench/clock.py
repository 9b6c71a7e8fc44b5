"""The one clock: timezone-aware UTC timestamps for every record the workbench writes.

``store/`` imports it too (store may import the core; the core never imports store), so a
row's ``created`` and a trace's or label's timestamp are made the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now, in UTC, timezone-aware (never a naive datetime: those compare wrongly with
    aware ones and lose their zone in JSON)."""
    return datetime.now(UTC)
