"""The one clock (workbench.clock.utcnow) every record is stamped with."""

from __future__ import annotations


def test_one_clock_is_timezone_aware() -> None:
    from datetime import UTC, datetime, timedelta

    import store.core_tables
    import workbench.review.queue
    from workbench.annotation import labels
    from workbench.clock import utcnow

    now = utcnow()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)
    # The old per-module clocks are this one (re-exported where other modules import them).
    assert store.core_tables.utcnow is workbench.review.queue.utcnow is labels.utcnow is utcnow
