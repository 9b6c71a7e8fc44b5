"""The Review queue's view controls: filters (reasons, full-text search, status), per-column
filters, sort, and saved views, all kept in the address so a reload, a pasted link or back
opens the same view (``workbench.review.views.ReviewView``). Page-private: saved views are
read from and written to the store (``store.review_views``), one set per analyst.

Widget states are seeded before the widgets are drawn (from the URL when it changed, from a
saved view when one is applied), and the shown view is written back to the URL after.

The page draws them in two places (issue 56: the card and its decision buttons in the first
screen at 1280×800): :func:`view_row` puts the sort, the search and the status beside the
dataset in one row; :func:`filter_controls` draws the rest inside the folded "Runs, filters and
saved views"; :func:`adopt_url` comes first, :func:`current_view` last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

import streamlit as st
from sqlalchemy.engine import Engine

from components import links, queue_nav
from store import review_views as view_store
from workbench.review.queue import REASON_TEXT, REASONS, STATUSES, ReviewError
from workbench.review.views import (
    DECISION_CHOICES,
    GOLD_CHOICES,
    VERDICT_CHOICES,
    ReviewView,
    sort_label,
    sort_options,
)

# ReviewView field -> the widget that shows it.
WIDGETS = {"reasons": "rv_reasons", "query": "rv_query", "status": "rv_status",
           "verdict": "rv_f_verdict", "gold": "rv_f_gold", "strategies": "rv_f_strategy",
           "decided": "rv_f_decided", "sort": "rv_sort", "descending": "rv_desc"}
FLASH = "rv_view_flash"


def _widget_value(view: ReviewView, name: str):
    value = getattr(view, name)
    return list(value) if isinstance(value, tuple) else value


def _seed(view: ReviewView, strategies: Sequence[str] | None,
          only: set[str] | None = None) -> None:
    """Put ``view`` into the widgets' states (``only``: those fields). ``strategies``: those
    the queue offers (None: not known yet; :func:`filter_controls` prunes them)."""
    for f in fields(view):
        if only is not None and f.name not in only:
            continue
        value = _widget_value(view, f.name)
        if f.name == "strategies" and strategies is not None:  # no longer in the queue
            value = [s for s in value if s in strategies]
        st.session_state[WIDGETS[f.name]] = value


def _current(strategies: Sequence[str]) -> ReviewView:
    state = st.session_state
    return ReviewView(
        reasons=tuple(state.get("rv_reasons", REASONS)), query=state.get("rv_query", ""),
        status=state.get("rv_status", STATUSES[0]), verdict=tuple(state.get("rv_f_verdict", ())),
        gold=tuple(state.get("rv_f_gold", ())),
        strategies=tuple(s for s in state.get("rv_f_strategy", ()) if s in strategies),
        decided=tuple(state.get("rv_f_decided", ())), sort=state.get("rv_sort", "queue"),
        descending=bool(state.get("rv_desc", False)))


def adopt_url() -> None:
    """Seed the widgets from the URL parameters that changed since this session wrote them
    (a reload, a pasted link); say once what the URL named that is not a choice. Before any
    of the view's widgets is drawn."""
    fresh = {param: value for param in ReviewView.PARAMS.values()
             if (value := links.fresh(param)) is not None}
    for f in fields(ReviewView):  # first run of a session: the defaults
        st.session_state.setdefault(WIDGETS[f.name], _widget_value(ReviewView(), f.name))
    if not fresh:
        return
    view, problems = ReviewView.from_params(fresh)
    names = {name for name, param in ReviewView.PARAMS.items() if param in fresh}
    _seed(view, None, names)
    if problems:
        queue_nav.leave_flash(FLASH, "warning", "The link's filters name what is not a choice, "
                              "left out: " + "; ".join(problems))


def _publish(view: ReviewView) -> None:
    params = view.to_params()
    for param in ReviewView.PARAMS.values():
        links.publish(param, params.get(param))


def _apply_saved(eng: Engine, owner: str, strategies: Sequence[str]) -> None:
    """Button callback: show the chosen saved view (before the widgets are drawn again)."""
    name = st.session_state.get("rv_view_pick")
    saved = view_store.views_for(eng, owner).get(name or "")
    if saved is None:
        queue_nav.leave_flash(FLASH, "error", "That view is not saved (any more); pick another.")
        return
    view, problems = ReviewView.from_params(saved)
    _seed(view, strategies)
    queue_nav.leave_flash(FLASH, "success", f"Showing your view “{name}”: {view.describe()}."
                          + (f" Left out: {'; '.join(problems)}." if problems else ""))


def _save(eng: Engine, owner: str, strategies: Sequence[str]) -> None:
    name = (st.session_state.get("rv_view_name") or "").strip()
    view = _current(strategies)
    try:
        view_store.save_view(eng, owner, name, view.to_params())
    except ReviewError as exc:
        queue_nav.leave_flash(FLASH, "error", str(exc))
        return
    st.session_state["rv_view_pick"] = name
    queue_nav.leave_flash(FLASH, "success", f"Saved the view “{name}”: {view.describe()}.")


def _delete(eng: Engine, owner: str) -> None:
    name = st.session_state.get("rv_view_pick") or ""
    if view_store.delete_view(eng, owner, name):
        st.session_state.pop("rv_view_pick", None)
        queue_nav.leave_flash(FLASH, "success", f"Deleted the view “{name}”.")


def saved_views(eng: Engine, owner: str, strategies: Sequence[str]) -> None:
    """Pick, save and delete this analyst's named views."""
    if not owner:
        st.caption("Enter your name (or sign in) to save views.")
        return
    mine = view_store.views_for(eng, owner)
    cols = st.columns([3, 1, 1], vertical_alignment="bottom")
    if mine:
        if st.session_state.get("rv_view_pick") not in mine:
            st.session_state["rv_view_pick"] = next(iter(mine))
        cols[0].selectbox("Your saved views", list(mine), key="rv_view_pick")
        cols[1].button("Show", key="rv_view_apply", on_click=_apply_saved,
                       args=(eng, owner, strategies), width="stretch")
        cols[2].button("Delete", key="rv_view_delete", on_click=_delete, args=(eng, owner),
                       width="stretch")
    else:
        cols[0].caption("No saved views yet: set the filters, name them below and save.")
    with st.container(horizontal=True, wrap=True, vertical_alignment="bottom"):
        st.text_input("Save these filters as", key="rv_view_name",
                      placeholder="e.g. refunds to check")
        st.button("Save view", key="rv_view_save", on_click=_save, args=(eng, owner, strategies),
                  width="content")


SORT_HELP = ("Most doubtful first: the verdicts the judge is least sure of, read through this "
             "dataset's setting, come first. Label next: the cases nobody has labelled yet that "
             "the current scorer is least sure of, one per conversation and SKILL in turn, so "
             "each label teaches it most.")


def view_row(sort_col, search_col, status_col) -> None:
    """The sort, the search and the status, each in the column given (the row the dataset
    heads). Everything else folds away (:func:`filter_controls`), so the card and its
    decision buttons start in the first screen (issues 44 and 56)."""
    sort_col.selectbox("Sort by", sort_options(), format_func=sort_label, key="rv_sort",
                       help=SORT_HELP)
    search_col.text_input("Search", key="rv_query",
                          placeholder="case id, words of the conversation, reply or reason")
    status_col.selectbox("Status", STATUSES, key="rv_status")


def filter_controls(eng: Engine, owner: str, strategies: Sequence[str]) -> None:
    """The filters that fold away (reasons and the per-column filters, the order reversed)
    and the saved views; drawn inside the page's expander, after the runs."""
    strategies = list(strategies)
    # Another dataset or run choice (or a link) can name a strategy the list does not offer.
    st.session_state["rv_f_strategy"] = [s for s in st.session_state["rv_f_strategy"]
                                         if s in strategies]
    st.multiselect("Show verdicts where", REASONS, format_func=REASON_TEXT.get,
                   key="rv_reasons", help="clear to see every judged verdict")
    cols = st.columns(4)
    cols[0].multiselect("Verdict", VERDICT_CHOICES, key="rv_f_verdict", placeholder="any")
    cols[1].multiselect("Gold label", GOLD_CHOICES, key="rv_f_gold", placeholder="any")
    cols[2].multiselect("Strategy", strategies, key="rv_f_strategy", placeholder="any")
    cols[3].multiselect("Decision so far", DECISION_CHOICES, key="rv_f_decided",
                        placeholder="any", help="by anyone, as it stands now")
    st.toggle("Reverse the order", key="rv_desc")
    st.divider()
    saved_views(eng, owner, strategies)


def current_view(strategies: Sequence[str]) -> ReviewView:
    """The view the widgets show (after a saved view's flash, drawn here), which the address
    then carries."""
    queue_nav.show_flash(FLASH)
    view = _current(list(strategies))
    _publish(view)
    return view
