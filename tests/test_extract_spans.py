"""Quote location: exact first, then whitespace-, quote- and emphasis-normalised, always
mapped back to offsets of the original text."""

from __future__ import annotations

import pytest

from workbench.extract.spans import MIN_QUOTE_CHARS, locate

TEXT = (
    "## Refunds\n\n"
    "Refunds go to the **original payment method** only.\n"
    "The agent must not refund to a gift card,\n   even when asked.\n"
    "Say \u201cno\u201d politely \u2014 never argue.\n"
)


def spans_text(found, text=TEXT):
    return [text[a:b] for a, b in found.spans]


def test_exact_quote():
    found = locate("The agent must not refund to a gift card,", TEXT)
    assert found.method == "exact"
    assert spans_text(found) == ["The agent must not refund to a gift card,"]


def test_whitespace_and_line_breaks_are_normalised():
    found = locate("The agent must not refund to a gift card, even when asked.", TEXT)
    assert found.method == "normalised"
    # The span covers the original text, line break and indentation included.
    assert spans_text(found) == ["The agent must not refund to a gift card,\n   even when asked"]


def test_markdown_emphasis_and_case_are_ignored():
    found = locate("refunds go to the original payment method only", TEXT)
    assert spans_text(found) == ["Refunds go to the **original payment method** only"]


def test_typographic_quotes_and_dashes():
    found = locate('Say "no" politely - never argue.', TEXT)
    assert spans_text(found) == ["Say \u201cno\u201d politely \u2014 never argue"]


def test_ellipsis_gives_one_span_per_fragment_in_order():
    found = locate("Refunds go to the original payment method ... never argue", TEXT)
    assert found.method == "fragments"
    assert spans_text(found) == ["Refunds go to the **original payment method", "never argue"]


@pytest.mark.parametrize(
    "quote",
    ["Refunds go to the bank account only.", "cash", "", "   ", "Say no... never lie to anyone."],
)
def test_untraceable_quotes(quote):
    assert locate(quote, TEXT) is None


def test_short_quotes_are_never_located_even_if_present():
    assert len("gift") < MIN_QUOTE_CHARS and locate("gift", TEXT) is None


def test_offsets_survive_characters_that_change_length_when_folded():
    text = "STRASSE: Die Stra\u00dfe ist gesperrt. The agent must reroute."
    found = locate("die strasse ist gesperrt", text)
    assert spans_text(found, text) == ["Die Stra\u00dfe ist gesperrt"]


def test_first_occurrence_wins():
    text = "Ask for the order id. Later: ask for the order id."
    assert locate("Ask for the order id.", text).spans == ((0, 21),)


LIST = "Travel insurance: \n- The agent should ask if the user wants insurance.\n- It costs 30 dollars.\n"


def test_label_joined_to_a_list_item_is_found():
    # As the embedded model quoted the airline SKILL: label line + list item as one sentence.
    found = locate("Travel insurance: The agent should ask if the user wants insurance.", LIST)
    expected = "Travel insurance: \n- The agent should ask if the user wants insurance"
    assert spans_text(found, LIST) == [expected]


def test_label_the_text_does_not_have_is_ignored():
    found = locate("Change flights: it costs 30 dollars.", LIST)
    assert spans_text(found, LIST) == ["It costs 30 dollars"]
