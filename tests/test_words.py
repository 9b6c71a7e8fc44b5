"""The formatting layer (workbench.words): durations, missing values, plurals, probability
bands and κ in words, checked against hand-written expectations (issue 44 item 4)."""

from __future__ import annotations

import math

import pytest

from workbench import words
from workbench.decision import DEFAULT_SETTING, decide


@pytest.mark.parametrize("seconds, text", [
    (None, "–"), (math.nan, "–"), (0.45, "450 ms"), (3, "3 s"), (8.56, "8.6 s"), (42.4, "42 s"),
    (189.3, "3 min 9 s"), (120, "2 min"), (3600, "1 h"), (7530, "2 h 6 min"), (7199, "2 h"),
])
def test_durations_read_as_words(seconds, text):
    assert words.duration(seconds) == text


def test_milliseconds_are_durations_too():
    assert words.duration_ms(189362.5) == "3 min 9 s"  # the Evaluate table's "latency ms"
    assert words.duration_ms(None) == "–"


def test_missing_values_read_as_a_dash():
    import pandas as pd

    for missing in (None, math.nan, pd.NA, pd.NaT):
        assert words.value(missing) == words.MISSING == "–"
    assert words.number(None) == "–"


def test_numbers_have_at_most_the_decimals_asked():
    assert words.number(0.86261875) == "0.86"
    assert words.number(1555.3333333, 1) == "1,555.3"
    assert words.number(3.0) == "3"
    assert words.value(True) == "yes"


def test_plurals_agree_with_the_count():
    assert words.plural(1, "decision") == "1 decision"
    assert words.plural(2, "decision") == "2 decisions"
    assert words.plural(1000, "trace") == "1,000 traces"


def test_kappa_on_too_few_decisions_says_so():
    assert words.agreement(0.0, 1) == "too few decisions to measure"  # was "0.00 (slight)"
    assert words.agreement(0.7, 12) == "0.70 (substantial)"
    assert words.agreement(None, 12) == "–"


def test_probability_bands_are_decision_words():
    # selective.decision_words' bands: "likely" from 80 %, else "probably" (compliant).
    def said(p: float) -> str:
        return words.probability(decide(DEFAULT_SETTING, probability=p))

    assert said(0.2).startswith("likely compliant — 80 %")
    assert said(0.35).startswith("probably compliant — 65 %")
    assert words.probability(None) == "–"


def test_field_names_become_labels():
    assert words.label("prompt_tokens") == "prompt tokens"
    assert words.label("latency_ms") == "latency"
    assert words.labelled({"completion_tokens": 3}) == {"completion tokens": 3}


def test_one_percent_formatter_writes_every_share():
    assert words.percent(0.5) == "50 %" and words.percent(0.6667, 1) == "66.7 %"
    assert words.percent(None) == words.percent(math.nan) == "–"
    # The card's probability reads through it: the same number, the same space.
    assert words.probability(decide(DEFAULT_SETTING, probability=0.83)).startswith(
        f"likely violation — {words.percent(0.83)}")


def test_the_built_in_scorer_is_named_never_v0():
    from workbench.decision import BUILTIN_VERSION

    assert words.setting_words(BUILTIN_VERSION) == "the built-in activation scorer"
    assert words.setting_words(3) == "setting version 3"
    assert "v0" not in words.setting_words(0)
    assert words.help_for(words.BUILTIN_TERM) and words.help_for("decision setting")
    # Which settings decided a set of cases: one, mixed with the judge's words, none.
    assert words.decided_by([0, 0]) == "the built-in activation scorer"
    assert words.decided_by([0, None]) == ("the built-in activation scorer where the judge's "
                                           "activations were kept, else the judge's words")
    assert words.decided_by([2, None]) == "setting version 2 where it has a score, else the judge's words"
    assert words.decided_by([None]) == "the judge's words (no saved setting)"
    assert words.decided_by([]) == "–"
