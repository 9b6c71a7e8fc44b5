"""A list of audited cases that scales: filter, sort and page through thousands of rows, each
with a link to its Replay view (in the style of Langfuse/Argilla tables).

``case_rows`` shapes stored traces into plain rows (no Streamlit); ``show_case_table`` draws
a page of them. Only the visible page goes to the browser, so a 1,000-case list costs what a
50-case one does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from components.links import replay_link
from workbench import words
from workbench.audit.trace import AuditTrace, latest_per_case
from workbench.decision import DecidedVerdict, decided_verdict
from workbench.vocabulary import COMPLIANT, VIOLATION
from workbench.words import gold_word

Verdicts = Mapping[tuple[str, str, str], DecidedVerdict]  # (run, case, strategy) -> record

CASE_COLUMNS = ("case", "strategy", "run", "verdict", "gold", "agrees with gold", "open")


def trace_verdict_word(trace: AuditTrace, run: str = "", verdicts: Verdicts | None = None) -> str:
    """What a stored trace's decided record says (violation, compliant, review), or "error" /
    "not judged" without a verdict. ``verdicts``: the records already built (by key), else the
    trace is read under the default setting."""
    if trace.error is not None:
        return "error"
    record = (verdicts or {}).get((run, trace.id, trace.strategy)) or decided_verdict(trace, run=run)
    return "not judged" if record.decided is None else record.label


def case_rows(dataset: str, records: Iterable[tuple[str, AuditTrace]],
              labels: Mapping[str, str | None] | None = None,
              verdicts: Verdicts | None = None) -> list[dict[str, Any]]:
    """One row per stored trace ``(run_id, trace)``: the case, its decided label (the record
    every card shows, from ``verdicts``) and gold label in plain words, whether they agree
    (``None`` when either is missing or the case is to review) and a Replay link pinned to
    the trace's run."""
    labels = labels or {}
    rows = []
    for run_id, t in records:
        case_id = t.id
        verdict = trace_verdict_word(t, run_id, verdicts)
        gold = gold_word(labels.get(case_id, t.label))
        words = (VIOLATION, COMPLIANT)
        agrees = (verdict == gold) if verdict in words and gold in words else None
        rows.append({"case": case_id, "strategy": t.strategy, "run": run_id,
                     "verdict": verdict, "gold": gold, "agrees with gold": agrees,
                     "open": replay_link(dataset, case_id, run_id)})
    return rows


def picker_rows(dataset: str, case_ids: Sequence[str],
                records: Iterable[tuple[str, AuditTrace]],
                labels: Mapping[str, str | None] | None = None,
                verdicts: Verdicts | None = None) -> list[dict[str, Any]]:
    """One row per case of a dataset for Replay's case picker, in the dataset's order: its
    newest stored trace (any strategy) when there is one, else "not judged"; a case with no
    trace is still listed, since it can be audited from Replay."""
    # records oldest first: the last one seen per case (any strategy) is the newest, and a
    # newer trace without a verdict does not hide a judged one (as the card beside it reads)
    records = list(records)
    newest = {t.id: (run, t) for run, t in latest_per_case(records, key=lambda r: r[1].id)}
    judged = {t.id: (run, t) for run, t in latest_per_case(
        [r for r in records if trace_verdict_word(r[1], r[0], verdicts) != "not judged"],
        key=lambda r: r[1].id)}
    newest.update(judged)
    rows = []
    for case_id in case_ids:
        if case_id in newest:
            row = case_rows(dataset, [newest[case_id]], labels, verdicts)[0]
            row["open"] = replay_link(dataset, case_id)  # the picker opens the newest trace
        else:
            row = {"case": case_id, "strategy": "", "run": "", "verdict": "not judged",
                   "gold": gold_word((labels or {}).get(case_id)), "agrees with gold": None,
                   "open": replay_link(dataset, case_id)}
        rows.append(row)
    return rows


def picked(selected_rows: Sequence[int], shown_cases: Sequence[str]) -> str | None:
    """The case of the row a user selected in the visible page (positions into it), or
    ``None`` when nothing (or a row no longer shown) is selected."""
    if not selected_rows:
        return None
    n = selected_rows[0]
    return shown_cases[n] if 0 <= n < len(shown_cases) else None


HIDDEN_TEXT = "_search_text"  # a column searched by the filter box, never shown


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def filter_sort_page(frame: pd.DataFrame, text: str = "", sort_by: str | None = None,
                     descending: bool = False, page: int = 1, page_size: int = 50,
                     columns: Mapping[str, Sequence[str]] | None = None,
                     ) -> tuple[pd.DataFrame, int, int]:
    """The rows matching ``text`` (case-insensitive; every word, each in some column,
    :data:`HIDDEN_TEXT` included) and, for each of ``columns``, holding one of its chosen
    values (none chosen: any), sorted, cut to ``page`` (1-based; clamped to the pages there
    are). Returns ``(rows, matching, pages)``."""
    for name, wanted in (columns or {}).items():
        if wanted:
            frame = frame[frame[name].astype(str).isin([str(v) for v in wanted])]
    words = text.strip().lower().split()
    if words:
        # Each row as one lower-case text (a missing cell is empty, not "nan").
        hay = [" ".join("" if _missing(v) else str(v) for v in row).lower()
               for row in frame.itertuples(index=False, name=None)]
        frame = frame[[all(w in h for w in words) for h in hay]]
    if sort_by and sort_by in frame.columns:
        frame = frame.sort_values(sort_by, ascending=not descending, kind="stable",
                                  na_position="last")
    matching = len(frame)
    pages = max(1, math.ceil(matching / page_size))
    page = min(max(1, page), pages)
    return frame.iloc[(page - 1) * page_size: page * page_size], matching, pages


QUEUE_COLUMNS = ("#", "case", "strategy", "run", "verdict", "how sure", "gold", "why queued",
                 "decisions", "open")


def queue_rows(dataset: str, items: Sequence[Any], decisions: Sequence[Any],
               reason_text: Mapping[str, str], setting: Any = None) -> list[dict[str, Any]]:
    """One row per Review queue item (``workbench.review.queue.QueueItem``), numbered as the queue
    shows them, with its decided record's label and how sure it is (the card's words), its
    decisions so far (``ReviewDecision``) and a Replay link. ``setting`` is kept for the
    callers' cache keys; the record already holds what it decided."""
    decided: dict[tuple, list[str]] = {}
    for d in decisions:
        decided.setdefault((d.run_id, d.case_id, d.strategy), []).append(
            f"{d.reviewer}: {d.decision}")
    rows = []
    for n, item in enumerate(items, 1):
        rows.append({"#": n, "case": item.case_id, "strategy": item.strategy, "run": item.run_id,
                     # the record the card shows, so a row never says otherwise
                     "verdict": item.verdict.label,
                     "how sure": words.probability(item.verdict.decided)
                     if item.verdict.score is not None else words.MISSING,
                     "gold": gold_word(item.label),
                     "why queued": ", ".join(reason_text.get(r, r) for r in item.reasons),
                     "decisions": "; ".join(decided.get(item.key, [])) or "none yet",
                     "open": replay_link(dataset, item.case_id, item.run_id)})
    return rows


def _step_page(key: str, step: int) -> None:
    """Button callback: move the page box of table ``key`` by ``step`` pages, within the pages
    its filter left (callbacks run before the box is drawn again, so they may set it)."""
    pages = int(st.session_state.get(f"{key}_pages", 1))
    current = min(int(st.session_state.get(f"{key}_page") or 1), pages)
    st.session_state[f"{key}_page"] = min(max(1, current + step), pages)


def show_case_table(rows: list[dict[str, Any]] | pd.DataFrame, key: str, page_size: int = 50,
                    columns: Sequence[str] = CASE_COLUMNS, pick_into: str | None = None,
                    search_text: Sequence[str] | None = None,
                    column_filters: Sequence[str] = (), select_into: str | None = None,
                    id_column: str | Sequence[str] = "#", sortable: bool = True) -> None:
    """Draw ``rows`` (from :func:`case_rows` or :func:`queue_rows`, with ``columns``; or a
    frame of them a page keeps cached) with a filter box, sort choice and pages. With
    ``pick_into``, selecting a row puts its case id into that session key (a widget's key:
    set in the selection callback, which runs before the page is drawn again, so the widget
    shows the pick). ``search_text``: more text per row (the conversation) that the filter
    box searches without showing it. ``column_filters``: columns that get a choice of their
    values each. ``select_into``: several rows may be selected; a tuple of each selected
    row's ``id_column`` value(s) goes into that session key (a list, set on every run).
    ``sortable=False``: no sort of its own, the rows keep their given order (a page whose
    list follows the page's one sort control, like Review's)."""
    # A frame may bring its searchable text along (a page's cached list).
    keep = [*columns, HIDDEN_TEXT] if isinstance(rows, pd.DataFrame) and HIDDEN_TEXT in rows \
        else list(columns)
    frame = pd.DataFrame(rows, columns=keep)
    if frame.empty:
        st.caption("No stored cases to list yet.")
        return
    if search_text is not None:
        frame = frame.assign(**{HIDDEN_TEXT: list(search_text)})
    searchable = HIDDEN_TEXT in frame.columns
    # The filter gets a row of its own: sharing one with the sort, toggle and page, the
    # toggle's seventh of the row cut its label to "D…" at 1024 px.
    text = st.text_input("Filter cases", key=f"{key}_filter",
                         placeholder="case id, verdict, gold, strategy or run"
                         + (", or words of the conversation" if searchable else ""))
    chosen: dict[str, list[str]] = {}
    if column_filters:
        for col, name in zip(st.columns(len(column_filters)), column_filters, strict=True):
            values = sorted({str(v) for v in frame[name]})
            chosen[name] = col.multiselect(name, values, key=f"{key}_col_{name}", placeholder="any")
    if sortable:
        c2, c3, c4 = st.columns([2, 1.3, 1], vertical_alignment="bottom")
        sort_by = c2.selectbox("Sort by", [c for c in columns if c != "open"], key=f"{key}_sort")
        descending = c3.toggle("Descending", key=f"{key}_desc")
    else:
        c4, _ = st.columns([1, 3.3], vertical_alignment="bottom")
        sort_by, descending = None, False
    page = c4.number_input("Page", min_value=1, value=1, step=1, key=f"{key}_page")
    shown, matching, pages = filter_sort_page(frame, text, sort_by, descending, int(page),
                                              page_size, chosen)
    shown = shown.drop(columns=[HIDDEN_TEXT], errors="ignore")
    st.session_state[f"{key}_pages"] = pages  # the page buttons' callbacks clamp to it
    current = min(int(page), pages)
    # The page box is too narrow in its column for Streamlit to draw its +/- buttons, so
    # paging needed typing a number: these buttons are the "next page" a user looks for.
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button("Previous page", key=f"{key}_prev", on_click=_step_page, args=(key, -1),
                  disabled=current <= 1)
        st.button("Next page", key=f"{key}_next", on_click=_step_page, args=(key, 1),
                  disabled=current >= pages)
        st.caption(f"{matching} of {len(frame)} rows match · page {current} of {pages}")
    config = {"open": st.column_config.LinkColumn(
        "open", display_text="Replay ↗", help="Open this case on the Replay page")}
    if select_into is not None:
        # Read after drawing, in this run: the ids of the rows selected on the page shown.
        event = st.dataframe(shown, hide_index=True, width="stretch", key=f"{key}_table",
                             column_config=config, on_select="rerun",
                             selection_mode="multi-row")
        positions = list(getattr(getattr(event, "selection", None), "rows", None) or [])
        cols = [id_column] if isinstance(id_column, str) else list(id_column)
        ids = [tuple(row) for row in shown[cols].itertuples(index=False, name=None)]
        st.session_state[select_into] = [ids[n] for n in positions if 0 <= n < len(ids)]
        return
    if pick_into is None:
        st.dataframe(shown, hide_index=True, width="stretch", key=f"{key}_table",
                     column_config=config)
        return
    # Selection positions refer to the page as drawn; the callback reads the ids from here.
    st.session_state[f"{key}_shown"] = [str(c) for c in shown["case"]]

    def pick() -> None:
        event = st.session_state.get(f"{key}_table") or {}
        rows_selected = list((event.get("selection") or {}).get("rows") or [])
        case_id = picked(rows_selected, st.session_state.get(f"{key}_shown", []))
        if case_id is not None:
            st.session_state[pick_into] = case_id

    st.dataframe(shown, hide_index=True, width="stretch", key=f"{key}_table",
                 column_config=config, on_select=pick, selection_mode="single-row")
