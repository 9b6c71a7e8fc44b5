"""Review (issue #16, items 4 and 10): the position is in the URL (reload keeps the place)
and the queue has a list view (filter, sort, pages) with Replay links."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.test_page_review import PAGE, card, db  # noqa: F401  (fixture)


def _open(query: dict) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.text_input(key="rv_reviewer").set_value("ada").run()
    assert not at.exception
    return at


def _param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_position_in_the_url_opens_that_verdict_and_follows_moves(db):  # noqa: F811
    at = _open({"dataset": "demo", "position": "3"})
    assert card(at).startswith("3/6 · case ")
    at.button(key="rv_next").click().run()
    assert card(at).startswith("4/6 · case ") and _param(at, "position") == "4"
    at.run()  # the address it wrote does not pull it back
    assert card(at).startswith("4/6 · case ")


def test_queue_list_view_filters_and_links_to_replay(db):  # noqa: F811
    at = _open({})
    listing = at.dataframe[-1].value
    assert list(listing["#"]) == [1, 2, 3, 4, 5, 6]
    assert set(listing["gold"]) <= {"violation", "compliant", "no gold label"}
    assert all(link.startswith("/replay?dataset=demo&case=") for link in listing["open"])
    at.text_input(key="rv_list_filter").set_value("raw").run()
    assert set(at.dataframe[-1].value["strategy"]) == {"raw"}


def test_kappa_on_few_decisions_is_flagged_as_unreliable(db):  # noqa: F811
    at = _open({})
    kappa = next(m for m in at.metric if m.label == "Cohen's κ")
    assert kappa.value == "too few decisions to measure" and kappa.delta == "no decisions yet"
