"""What the tests of the stored scaling outcomes (``fixtures/scaling/*``) share: a folder's
verdict rows, and the check that each outcome row was scored from its verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def verdict_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows of ``folder/verdicts.jsonl``: one judge's answer on one case each."""
    with open(folder / "verdicts.jsonl", encoding="utf-8") as fh:
        return list(map(json.loads, fh))


def assert_scored_from(outcomes: Any, verdict_of: Callable[[Any], dict[str, Any]]) -> None:
    """Each outcome row agrees with the verdict it was scored from (``verdict_of(row)``): its
    label and session, and ``correct`` exactly when the judge answered and its answer matches
    the gold label (a violation is a ``negative`` case)."""
    for row in outcomes.itertuples():
        v = verdict_of(row)
        assert row.label == v["label"] and row.session == v["session"]
        judged = v["violation"] is not None
        assert row.correct == int(judged and v["violation"] == (v["label"] == "negative")), row.instance
