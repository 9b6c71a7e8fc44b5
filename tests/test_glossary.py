"""Plain words (issue #16, item 9 and 3): the data's positive/negative never reaches the
screen, every metric has a tooltip, and the Glossary page lists and filters the terms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.review.queue import METRIC_COLUMNS
from workbench.words import TERMS, gold_word, help_for

ROOT = Path(__file__).resolve().parents[1]
_RAW_LABEL = re.compile(r"\b(positive|negative)\b", re.I)


def test_gold_words_follow_the_dataset_convention():
    # CompliBench: a "negative" conversation is one where the agent broke the policy.
    assert gold_word("negative") == "violation"
    assert gold_word("Positive ") == "compliant"
    assert gold_word(None) == "no gold label"
    assert gold_word("") == "no gold label"
    assert gold_word("unsure") == "unsure"  # never silently turned into one of the two


def test_every_metric_column_and_named_metric_has_help():
    identifiers = {"dataset", "run", "strategy", "cases", "labelled", "judged", "errors",
                   "latency ms"}
    missing = [c for c in METRIC_COLUMNS if c not in identifiers and not help_for(c)]
    assert missing == []
    for name in ("coupling", "density", "complexity", "PCR", "RF-PCR", "hint rate",
                 "mean credit", "Cohen's κ", "largest block", "a", "b", "gamma_retail",
                 # the words the pages use for what decides and what it promises
                 "SKILL", "CDG", "decision setting", "activation scorer",
                 "built-in activation scorer", "guarantee", "split-certified guarantee",
                 "labels needed", "label next"):
        assert help_for(name), name
    assert help_for("no such metric") is None
    assert len({t.name.lower() for t in TERMS}) == len(TERMS)  # no term defined twice


def _screen_text(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "text", "error", "success", "info", "warning"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


@pytest.mark.parametrize("label, word", [("negative", "violation"), ("positive", "compliant")])
def test_replay_shows_the_gold_label_in_plain_words(demo_db, label, word):
    _, _, cases = demo_db
    case = next(c for c in cases if c.label == label)
    at = AppTest.from_file(str(ROOT / "pages" / "replay.py"), default_timeout=60).run()
    at.selectbox(key="replay_case").set_value(case.id).run()
    assert not at.exception
    shown = _screen_text(at).replace("\\", "")
    assert f"Gold label: {word}" in shown
    assert not _RAW_LABEL.search(shown), _RAW_LABEL.search(shown)
    options = "\n".join(at.selectbox(key="replay_case").options)  # the case picker's labels
    assert not _RAW_LABEL.search(options) and "gold: violation" in options


def test_glossary_page_lists_and_filters_terms():
    at = AppTest.from_file(str(ROOT / "pages" / "glossary.py"), default_timeout=30).run()
    assert not at.exception
    # A table whose cells wrap (issue 56: a data grid cut each meaning at ~55 characters).
    assert len(at.table[0].value) == len(TERMS) and not at.dataframe
    assert list(at.table[0].value.columns) == ["meaning", "where"]
    # Searchable by the spelled-out name too, not only by the symbol on screen (κ).
    at.text_input(key="glossary_query").set_value("kappa").run()
    assert list(at.table[0].value.index) == ["Cohen's κ", "Fleiss' κ"]
    at.text_input(key="glossary_query").set_value("no such word").run()
    assert not at.table and "No term matches" in at.info[0].value


def test_glossary_page_is_registered():
    assert 'st.Page("pages/glossary.py"' in (ROOT / "app.py").read_text()


def test_statistics_tables_use_plain_names_and_no_none():
    from components.glossary import plain_stats

    frame = plain_stats([{"task": "rule", "n_items": 1, "cohen_kappa": None,
                          "percent_agreement": 1.0}])
    assert list(frame.columns) == ["task", "items", "Cohen's κ", "agreement"]
    assert frame.loc[0, "Cohen's κ"] == "–"
    assert help_for("Cohen's κ") and help_for("agreement") and help_for("Fleiss' κ")
