"""Steps shared by the Review queue's browser tests: a server whose store holds hand-set
verdicts of a cdg run over demo cases, and the reviewer's moves through the queue."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from workbench.identity.roles import COMMAND_LINE

from .conftest import ROOT, Server, demo_index, make_server
from .flows import submit
from .screen import idle, screen, shown

NOTE = "Note (required to overturn)"


def seed_verdicts(db_url: str, case_ids: Collection[str],
                  verdict: Callable[[Any, Any], Any]) -> None:
    """Store the demo cases named in ``case_ids`` and, as run ``run-1`` of dataset ``demo``,
    a cdg trace of each whose whole-mode verdict is ``verdict(case, trace)`` (no model)."""
    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import AuditIndex, AuditOptions, audit_case, load_cases
    from workbench.graph import PolicyIndex

    eng = make_engine(db_url)
    cases = [c for c in load_cases(ROOT / "fixtures" / "demo" / "cases.jsonl") if c.id in case_ids]
    audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
    index = AuditIndex(PolicyIndex.from_dict(demo_index()))
    traces = []
    for case in cases:
        t = audit_case(case, index, "cdg", None, AuditOptions(judge_mode="none"))
        t.judge_mode = "whole"
        t.verdict = verdict(case, t)
        traces.append(t)
    audit_repo.save_traces(eng, traces, "run-1", "demo", actor=COMMAND_LINE)
    eng.dispose()


@contextmanager
def review_server(tmp_path, seed: Callable[[str], None]) -> Iterator[Server]:
    """A server on the demo index whose database ``seed(db_url)`` filled once it was up."""
    srv = make_server(tmp_path, demo_index())
    try:
        seed(srv.db_url)
        yield srv
    finally:
        srv.stop()


def review_fixture(seed: Callable[[str], None]):
    """A ``server`` fixture (assign it as ``server = review_fixture(seed)``): a fresh
    :func:`review_server` filled by ``seed`` for each test."""

    @pytest.fixture
    def server(tmp_path):
        with review_server(tmp_path, seed) as srv:
            yield srv

    return server


def expect_card(page, text: str) -> None:
    """Until the card holding ``text`` is the one shown, in an idle page."""
    shown(page, lambda s: s.locator(".st-key-rv_card", has_text=text))


def leave_fields(page) -> None:
    """Take the focus out of any text field, so the next key is a shortcut, not typing."""
    page.evaluate("document.activeElement && document.activeElement.blur()")


def open_queue(page, server: Server, query: str, card: str) -> None:
    """Open ``/review{query}``, sign the reviewer ada in, and wait for the card ``card``."""
    page.goto(f"{server.url}/review{query}")
    idle(page)
    submit(page, "Reviewer", "ada")
    expect_card(page, card)


def type_note(page, text: str) -> None:
    """Type the decision note key by key (letters that are shortcuts stay in the field) and
    commit it with Tab."""
    screen(page).get_by_label(NOTE).click()
    page.keyboard.type(text)
    page.keyboard.press("Tab")
    idle(page)
