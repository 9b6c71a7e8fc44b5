"""The case list (issue #16, item 10): plain-word rows with Replay links, and filter / sort /
pages that cut a long list to one page; the Evaluate page lists its per-case results."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from components.case_table import case_rows, filter_sort_page
from tests.test_page_evaluate import PAGE, db  # noqa: F401  (fixture)
from workbench.audit.trace import AuditError, AuditTrace, Verdict


def test_case_rows_use_plain_words_and_link_to_the_run():
    records = [("run-1", AuditTrace("c1", "cdg", verdict=Verdict(True, "", ["R1"]))),
               ("run-1", AuditTrace("c2", "cdg", verdict=Verdict(True, "", ["R1"]))),
               ("run-2", AuditTrace("c3", "raw")),
               ("run-2", AuditTrace("c4", "raw", error=AuditError("x", "")))]
    rows = case_rows("demo", records, {"c1": "negative", "c2": "positive", "c3": "negative"})
    assert [(r["verdict"], r["gold"], r["agrees with gold"]) for r in rows] == [
        ("violation", "violation", True), ("violation", "compliant", False),
        ("not judged", "violation", None), ("error", "no gold label", None)]
    assert rows[2]["open"] == "/replay?dataset=demo&case=c3&run=run-2"


def test_filter_sort_and_pages():
    frame = pd.DataFrame({"case": [f"c{i:04d}" for i in range(1000)],
                          "verdict": ["violation" if i % 3 == 0 else "compliant" for i in range(1000)]})
    shown, matching, pages = filter_sort_page(frame, "VIOLATION", "case", descending=True,
                                              page=2, page_size=50)
    assert matching == 334 and pages == 7  # ceil(334 / 50)
    # descending ids among multiples of 3: c0999, c0996, ...; page 2 starts at the 51st
    assert list(shown["case"])[:2] == ["c0849", "c0846"] and len(shown) == 50
    last, _, _ = filter_sort_page(frame, "violation", "case", page=99, page_size=50)
    assert len(last) == 334 - 6 * 50  # a page past the end shows the last page
    none, matching, pages = filter_sort_page(frame, "no such text")
    assert none.empty and matching == 0 and pages == 1


def test_evaluate_lists_cases_with_replay_links(db):  # noqa: F811
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    cases = at.dataframe[-1].value  # the per-case list is the last table
    assert len(cases) == 13  # 3 runs x 4 demo cases + one odd dataset trace
    assert set(cases["gold"]) <= {"violation", "compliant"}
    assert all(link.startswith("/replay?dataset=") for link in cases["open"])
    at.text_input(key="ev_cases_filter").set_value("run-2").run()
    assert list(at.dataframe[-1].value["run"].unique()) == ["run-2"]


def test_replay_picker_lists_every_case_with_its_newest_trace():
    from components.case_table import picked, picker_rows

    records = [("run-1", AuditTrace("c1", "cdg", verdict=Verdict(True, "", []))),
               ("run-2", AuditTrace("c1", "raw", verdict=Verdict(False, "", [])))]
    rows = picker_rows("demo", ["c1", "c2"], records, {"c1": "negative", "c2": "positive"})
    assert [(r["case"], r["run"], r["verdict"], r["gold"]) for r in rows] == [
        ("c1", "run-2", "compliant", "violation"),  # the newest trace, not the first
        ("c2", "", "not judged", "compliant")]  # no trace yet: still listed, can be audited
    assert rows[1]["open"] == "/replay?dataset=demo&case=c2"
    # A selected row position maps to the case shown there; stale positions pick nothing.
    assert picked([1], ["c7", "c9"]) == "c9"
    assert picked([], ["c7"]) is None and picked([5], ["c7"]) is None


def _paged_table() -> None:
    from components.case_table import show_case_table

    show_case_table([{"case": f"c{i:03d}", "verdict": "violation" if i % 2 else "compliant"}
                     for i in range(120)], key="t", page_size=50, columns=("case", "verdict"))


def test_next_and_previous_page_buttons_move_within_the_pages_there_are():
    """The page box's own +/- are not drawn in its narrow column: without these buttons a
    user had to type a page number."""
    at = AppTest.from_function(_paged_table).run()
    assert at.button(key="t_prev").disabled and not at.button(key="t_next").disabled
    at.button(key="t_next").click().run()
    assert "page 2 of 3" in at.caption[0].value
    assert at.dataframe[0].value["case"].iloc[0] == "c050"
    at.button(key="t_next").click().run()
    assert "page 3 of 3" in at.caption[0].value and at.button(key="t_next").disabled
    assert len(at.dataframe[0].value) == 20
    # A filter leaves 60 rows (2 pages): page 3 shows as 2, and Previous goes to 1 from there.
    at.text_input(key="t_filter").set_value("compliant").run()
    assert "60 of 120 rows match · page 2 of 2" in at.caption[0].value
    at.button(key="t_prev").click().run()
    assert "page 1 of 2" in at.caption[0].value
    assert at.dataframe[0].value["case"].iloc[0] == "c000"
