"""Case lists (Review's queue list, Replay's picker): every word of the filter must occur in
the row, cells may be empty, the conversation is searched without being shown, and column
filters narrow to the chosen values (issue #35 item 6)."""

from __future__ import annotations

import pandas as pd

from components.case_table import HIDDEN_TEXT, filter_sort_page


def frame():
    return pd.DataFrame([
        {"case": "c1", "verdict": "violation", "agrees with gold": None,
         HIDDEN_TEXT: "the skillet arrived broken"},
        {"case": "c2", "verdict": "compliant", "agrees with gold": True,
         HIDDEN_TEXT: "a refund for the late order"},
        {"case": "c3", "verdict": "violation", "agrees with gold": float("nan"),
         HIDDEN_TEXT: "refund the skillet"},
    ])


def test_words_anywhere_in_the_row_including_the_conversation():
    rows, matching, _ = filter_sort_page(frame(), "SKILLET violation")
    assert list(rows["case"]) == ["c1", "c3"] and matching == 2
    rows, _, _ = filter_sort_page(frame(), "refund skillet")
    assert list(rows["case"]) == ["c3"]
    assert filter_sort_page(frame(), "nan")[1] == 0  # an empty cell is not the word "nan"
    assert filter_sort_page(frame(), "none")[1] == 0


def test_column_filters_narrow_to_the_chosen_values():
    rows, matching, _ = filter_sort_page(frame(), "", columns={"verdict": ["violation"]})
    assert list(rows["case"]) == ["c1", "c3"]
    rows, _, _ = filter_sort_page(frame(), "refund", columns={"verdict": ["violation"],
                                                              "case": []})
    assert list(rows["case"]) == ["c3"]
