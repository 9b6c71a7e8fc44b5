"""Issue #16's numbered problems that had no browser test of their own, each opened in real
Chromium against a real server and checked for the fixed behaviour:

2. a re-run on Replay is a preview beside the stored verdict, stored only on request;
3. gold labels read "violation"/"compliant", never the data's positive/negative;
6. a long extraction says how long it will take and waits for a confirmation;
7. junk uploads (empty, binary) are refused by name, and no SKILL is saved;
9. metrics carry plain-word help, and the glossary explains the terms.

(1: test_graph_versions; 4, 5, 10: test_deep_links and test_issue16_browsing; 8:
test_dark_contrast; 11: test_roles.)
The server answers model calls only from an empty recordings file: a model call these flows
must not make fails loudly instead of starting the embedded model.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from workbench.identity.roles import COMMAND_LINE

from . import flows
from .screen import idle, screen, shown
from .test_analyst_flow import RUN, violation_trace

pytestmark = pytest.mark.e2e

RAW_GOLD = re.compile(r"\b(positive|negative)\b", re.I)


@pytest.fixture
def demo(tmp_path_factory):  # one server per test: test 2 stores a trace
    index = flows.demo_index_data()
    cases = flows.demo_cases()
    trace = violation_trace(index, {c.id for c in cases})
    tmp = tmp_path_factory.mktemp("issue16")
    (tmp / "none.jsonl").write_text("", encoding="utf-8")

    def seed(eng) -> None:
        from store import audit_repo

        flows.import_index(eng, index, author="demo")
        audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
        audit_repo.save_trace(eng, trace, RUN, "demo", actor=COMMAND_LINE)

    env = {"WORKBENCH_LLM_MODE": "replay", "WORKBENCH_LLM_RECORDINGS": str(tmp / "none.jsonl")}
    srv = flows.start_server(tmp, seed, env)
    case = next(c for c in cases if c.id == trace.id)
    yield srv, case
    srv.stop()


def main_text(page) -> str:
    return screen(page).locator("[data-testid='stMain']").inner_text()


@pytest.fixture
def judged(tmp_path_factory):
    """The demo server with a scripted judge (an OpenAI-compatible test server)."""
    from .judge_server import scripted_judge

    index = flows.demo_index_data()
    cases = flows.demo_cases()
    trace = violation_trace(index, {c.id for c in cases})

    def seed(eng) -> None:
        from store import audit_repo

        flows.import_index(eng, index, author="demo")
        audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
        audit_repo.save_trace(eng, trace, RUN, "demo", actor=COMMAND_LINE)

    with scripted_judge() as (judge, env):
        srv = flows.start_server(tmp_path_factory.mktemp("issue16-judged"), seed, env)
        yield srv, next(c for c in cases if c.id == trace.id), judge
        srv.stop()


def test_2_rerun_on_replay_is_a_preview_until_stored(judged, page):
    server, case, judge = judged
    flows.goto(page, server, f"replay?dataset=demo&case={case.id}")
    before = stored_runs(server)
    assert before == [RUN]
    flows.choose(page, "Judge", "none")  # no model call: the preview builds the context only
    screen(page).get_by_role("button", name="Re-run audit (preview)").click()
    idle(page)
    preview = screen(page).locator(".st-key-preview_cdg")
    expect(preview).to_contain_text("Preview of a new audit")
    expect(preview).to_contain_text("Stored")
    expect(preview).to_contain_text("New (not stored)")
    expect(preview.locator("[data-testid='stMetricValue']").first).to_have_text("violation")
    # Issue #35: a re-run without a verdict has nothing to store (it hid the judged trace).
    expect(preview).to_contain_text("Nothing to store: it was run without a judge")
    expect(preview.get_by_role("button", name="Store this result")).to_have_count(0)
    assert stored_runs(server) == before  # nothing stored, no run mixed into
    flows.assert_no_exception(page, server)
    flows.choose(page, "Judge", "whole")  # the scripted judge answers "compliant"
    screen(page).get_by_role("button", name="Re-run audit (preview)").click()
    idle(page)  # the judged run: over a minute on a loaded machine
    expect(preview.locator("[data-testid='stMetricValue']").nth(1)).to_have_text("compliant")
    assert len(judge.requests) == 1 and stored_runs(server) == before
    preview.get_by_role("button", name="Store this result").click()
    shown(page, lambda s: s.get_by_text("Stored the new cdg result as run"), timeout=30_000)
    idle(page)
    after = stored_runs(server)
    assert len(after) == 2 and after[0] == RUN
    assert after[1].startswith(f"replay-{case.id}-cdg-")  # a run of its own


def stored_runs(server) -> list[str]:
    """The runs stored for the demo dataset, the seeded one first."""
    from store import audit_repo
    from store.db import make_engine

    eng = make_engine(server.db_url)
    try:
        return sorted(audit_repo.runs(eng, "demo"), key=lambda r: (r != RUN, r))
    finally:
        eng.dispose()


def test_3_gold_labels_read_violation_or_compliant_everywhere(demo, page):
    from workbench.words import gold_word

    server, case = demo
    word = gold_word(case.label)
    assert word in ("violation", "compliant")
    flows.goto(page, server, f"replay?dataset=demo&case={case.id}")
    shown(page, lambda s: s.get_by_text(f"Gold label: {word}"))
    assert not RAW_GOLD.search(main_text(page)), main_text(page)
    flows.goto(page, server, "review")
    shown(page, lambda s: s.locator(".st-key-rv_card"))
    shown(page, lambda s: s.get_by_text(f"Gold: {word}"))
    assert not RAW_GOLD.search(main_text(page))
    flows.goto(page, server, "evaluate")
    flows.assert_no_exception(page, server)
    assert not RAW_GOLD.search(main_text(page))


def big_skill() -> bytes:
    sections = [
        f"## Section {i}\n\n" + " ".join(
            f"Agents must check condition {i}.{j} before acting on request {j}." for j in range(25))
        for i in range(90)
    ]
    return ("---\nname: huge-desk\ndescription: A very long policy.\n---\n# Huge desk\n\n"
            + "\n\n".join(sections) + "\n").encode()


def upload(page, files: list[tuple[str, bytes]]) -> None:
    screen(page).locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        [{"name": name, "mimeType": "text/markdown", "buffer": data} for name, data in files])
    idle(page)


def skill_names(server) -> list[str]:
    from store import repo
    from store.db import make_engine

    eng = make_engine(server.db_url)
    try:
        return repo.skill_names(eng)
    finally:
        eng.dispose()


def open_upload(page, server) -> list[str]:
    """The Skills page with its upload box open; returns the SKILLs stored before."""
    before = skill_names(server)
    flows.goto(page, server, "skills")
    screen(page).get_by_text("Upload SKILLs and extract their rule graphs").click()
    idle(page)
    return before


def test_6_a_long_extraction_gives_an_estimate_and_waits(demo, page):
    server, _ = demo
    before = open_upload(page, server)
    block = screen(page).get_by_role("spinbutton", name="Block size (tokens per extractor call)")
    block.fill("200")
    block.press("Enter")
    idle(page)
    upload(page, [("HUGE.md", big_skill())])
    screen(page).get_by_role("button", name="Extract", exact=True).click()
    idle(page)
    warning = screen(page).locator("[data-testid='stAlertContentWarning']", has_text="This extraction is big")
    expect(warning).to_contain_text("blocks")
    expect(warning).to_contain_text("about")
    expect(screen(page).get_by_role("checkbox", name="Extract anyway")).to_be_attached()
    assert skill_names(server) == before  # nothing started, nothing saved
    flows.assert_no_exception(page, server)


def test_7_junk_uploads_are_refused_by_name(demo, page):
    server, _ = demo
    before = open_upload(page, server)
    upload(page, [("empty.md", b""), ("noise.md", bytes(range(256)) * 8)])
    errors = screen(page).locator("[data-testid='stAlertContentError']")
    expect(errors.filter(has_text="empty.md is empty")).to_have_count(1)
    expect(errors.filter(has_text="noise.md")).to_have_count(1)
    for text in errors.all_inner_texts():
        assert "Nothing was saved" in text and "/tmp" not in text, text
    # nothing left to extract
    assert screen(page).get_by_role("button", name="Extract", exact=True).count() == 0
    assert skill_names(server) == before


def test_9_metrics_have_plain_word_help_and_a_glossary(demo, page):
    from workbench.words import help_for

    server, _ = demo
    flows.goto(page, server, "skills")
    metric = screen(page).locator("[data-testid='stMetric']", has_text="Complexity, all SKILLs")
    metric.locator("[data-testid='stTooltipIcon']").hover()
    expect(screen(page).get_by_text(help_for("complexity")).first).to_be_visible()
    flows.goto(page, server, "glossary")
    find = screen(page).get_by_label("Find a term")
    for query, term in (("coupling", "coupling"), ("kappa", "Cohen's κ"), ("PCR", "RF-PCR")):
        find.fill(query)
        find.press("Enter")
        # The glossary is a table whose cells wrap (issue 56): the term heads its row.
        shown(page, lambda s, t=term: s.locator("[data-testid='stTable'] th", has_text=t))
    flows.goto(page, server, "review")
    kappa = screen(page).locator("[data-testid='stMetric']", has_text="Cohen's κ")
    expect(kappa).to_contain_text("too few decisions to measure")  # no κ of 1.00 after one
    flows.assert_no_exception(page, server)
    assert page.external_requests == []
