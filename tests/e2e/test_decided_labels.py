"""One verdict per case, read in real Chromium (issue 53 "Must show"): on the demo as
``make demo`` stores it, with the rules found for its score-decided verdicts
(``tests/decided_demo.py``), the label `workbench verdicts` prints for each of the 21 cases is
the one the Review card, the Replay card and Browse table, and Evaluate's per-case table show.
A violation's card names its rule; none reads "complies"."""

from __future__ import annotations

import json
import re

import pytest

from tests.decided_demo import DATASET, seed_decided_demo

from .review_queue import review_server
from .screen import idle, shown

pytestmark = pytest.mark.e2e

HEADERS = {"Violation": "violation", "Compliant": "compliant", "To review": "review"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decided")
    with review_server(tmp, seed_decided_demo) as srv:
        yield srv


@pytest.fixture(scope="module")
def labels(server) -> dict[str, dict]:
    import contextlib
    import io
    import os

    from workbench.cli import main

    out = io.StringIO()
    old = os.environ.get("WORKBENCH_DB")
    os.environ["WORKBENCH_DB"] = server.db_url
    try:
        with contextlib.redirect_stdout(out):
            assert main(["verdicts", "--dataset", DATASET, "--json"]) == 0
    finally:
        if old is None:
            os.environ.pop("WORKBENCH_DB", None)
        else:
            os.environ["WORKBENCH_DB"] = old
    return {(r := json.loads(line))["case"]: r for line in out.getvalue().splitlines()}


def card_label(page, key: str) -> str:
    """The header of the verdict card (container ``verdict_<key>``) of the newest render."""
    card = shown(page, lambda s: s.locator(f".st-key-verdict_{key}"), timeout=60_000).first
    text = card.inner_text()
    found = [label for header, label in HEADERS.items()
             if re.search(rf"(^|\n){re.escape(header)}(\n|$)", text)]
    assert len(found) == 1, text[:400]
    return found[0]


def grid_labels(page, grid, cases) -> dict[str, str]:
    """case -> its verdict in a case table (``components.case_table``): the grid draws on a
    canvas, its cells are in an accessibility table that holds the rows in view only, so the
    grid is scrolled until no new row comes; in a row the verdict comes before gold."""
    shown(page, lambda s: grid.locator("td"), timeout=60_000)
    out: dict[str, str] = {}
    for _ in range(12):
        before = len(out)
        for row in grid.locator("tr").all():
            cells = [c.strip() for c in row.locator("td").all_text_contents()]
            case = next((c for c in cells if c in cases), None)
            label = next((c for c in cells if c in ("violation", "compliant", "review")), None)
            if case and label:
                out[case] = label
        if len(out) == len(cases) or (len(out) == before and before):
            break
        box = grid.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, 300)
        idle(page)  # until the grid has drawn the rows scrolled in (nothing drawn for a while)
    return out


def test_review_and_replay_cards_show_the_label_the_command_prints(server, page, labels):
    assert len(labels) == 21
    for cid, row in labels.items():
        page.goto(f"{server.url}/review?dataset={DATASET}&case={cid}&strategy=cdg&reasons=none")
        shown(page, lambda s, c=cid: s.locator(".st-key-rv_card", has_text=f"case {c} ·"),
              timeout=90_000)
        card = shown(page, lambda s: s.locator("[class*='st-key-verdict_']")).first
        key = next(c for c in (card.get_attribute("class") or "").split()
                   if c.startswith("st-key-verdict_"))[len("st-key-verdict_"):]
        assert card_label(page, key) == row["label"], f"Review {cid}"
        if row["label"] == "violation":
            text = card.inner_text()
            assert row["rules"][0] in text and "complies" not in text.lower(), cid
        page.goto(f"{server.url}/replay?dataset={DATASET}&case={cid}")
        idle(page)
        assert card_label(page, "a") == row["label"], f"Replay {cid}"
    assert page.external_requests == []


def test_browse_and_evaluate_tables_show_the_same_labels(server, page, labels):
    page.goto(f"{server.url}/replay?dataset={DATASET}&case={next(iter(labels))}")
    idle(page)
    section = shown(page, lambda s: s.get_by_test_id("stExpander").filter(
        has_text="Browse the")).first
    section.locator("summary").click()
    grid = shown(page, lambda s: s.get_by_test_id("stExpander").filter(has_text="Browse the")
                 .get_by_test_id("stDataFrame")).first
    browse = grid_labels(page, grid, labels)
    assert len(browse) >= 20 and all(browse[c] == labels[c]["label"] for c in browse), browse
    page.goto(f"{server.url}/evaluate")
    idle(page)
    shown(page, lambda s: s.get_by_text("Per-case results"), timeout=90_000).first \
        .scroll_into_view_if_needed()
    grid = shown(page, lambda s: s.get_by_test_id("stDataFrame")).last
    grid.scroll_into_view_if_needed()
    got = grid_labels(page, grid, labels)
    assert len(got) >= 20 and all(got[c] == labels[c]["label"] for c in got), got
