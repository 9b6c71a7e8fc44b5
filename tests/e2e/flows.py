"""Helpers shared by the user-flow browser tests (author, analyst, injection): a server with
extra environment (the model gateway in replay mode), database seeding, Streamlit's data
editor driven through its grid, and the checks that hostile text ran nothing.

The data editor (glide-data-grid) draws its cells on a canvas; the DOM has them only in an
accessibility table (``td#glide-cell-<col>-<row>``, ``aria-selected`` on the selected cell),
which tells us what the grid holds but does not take clicks. So a cell is selected with a
real click on the canvas and the arrow keys, then edited as a keyboard user would: typing
opens a text cell's editor, Enter opens a select-box cell's menu.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from workbench.identity.roles import COMMAND_LINE

from .conftest import ROOT, Server
from .screen import idle, screen, shown, until

RECORDINGS = ROOT / "fixtures" / "recordings"
DEMO = ROOT / "fixtures" / "demo"
SCRIPT_PAYLOADS = ('<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>")
# Port 9 (discard) on this machine: nothing answers, but a request to it would be seen.
IMAGE_PAYLOAD = "![x](http://127.0.0.1:9/pwn.png)"
PAYLOAD = " ".join([*SCRIPT_PAYLOADS, IMAGE_PAYLOAD])


class EnvServer(Server):
    """``Server`` (same launcher, flags and failure output) with extra environment for the
    server process, e.g. ``WORKBENCH_LLM_MODE=replay``."""

    def __init__(self, db_url: str, log: Path, env: Mapping[str, str] | None = None):
        super().__init__(db_url, log, dict(env or {}))


def replay_env(recording: str) -> dict[str, str]:
    """Environment for a server whose model calls are answered from a recordings file in
    ``fixtures/recordings`` (an unrecorded request fails loudly; no live model is asked)."""
    path = RECORDINGS / recording
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such recording; record it first (see fixtures/)")
    return {"WORKBENCH_LLM_MODE": "replay", "WORKBENCH_LLM_RECORDINGS": str(path)}


def start_server(tmp_path: Path, seed: Callable | None = None,
                 env: Mapping[str, str] | None = None) -> EnvServer:
    """A server on a fresh database that ``seed(engine)`` filled first (when given)."""
    from store.db import make_engine

    db_url = f"sqlite:///{tmp_path / 'e2e.db'}"
    eng = make_engine(db_url)
    try:
        if seed is not None:
            seed(eng)
    finally:
        eng.dispose()
    server = EnvServer(db_url, tmp_path / "server.log", env)
    server.wait()
    return server


def server_output(server: Server) -> str:
    return server.log.read_text() if server.log.exists() else ""


# -- seeding -------------------------------------------------------------------------------

def import_index(eng, data: dict, author: str = "import") -> None:
    from store import repo
    from workbench.graph import PolicyIndex

    repo.import_index(eng, PolicyIndex.from_dict(data), author=author, actor=COMMAND_LINE)


def demo_index_data() -> dict:
    return json.loads((DEMO / "index.json").read_text())


def demo_cases():
    from workbench.audit import load_cases

    return load_cases(DEMO / "cases.jsonl")


# -- the page --------------------------------------------------------------------------------

def goto(page, server: Server, url_path: str) -> None:
    """Open ``url_path`` and wait for its first idle render (a heading drawn)."""
    page.goto(f"{server.url}/{url_path}")
    shown(page, lambda s: s.locator("h1"))


def submit(page, label: str, text: str) -> None:
    """Type ``text`` into the text field labelled ``label`` and press Enter (a Streamlit text
    input applies its value on Enter), then wait for the rerun."""
    box = screen(page).get_by_label(label)
    box.fill(text)
    box.press("Enter")
    idle(page)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` with the keyboard: the box is
    focused and opened once the page is idle (no rerun can redraw it meanwhile), and the
    option is read from the list that opened."""
    box = screen(page).get_by_role("combobox", name=label, exact=True)
    box.focus()
    box.press("ArrowDown")  # opens the list
    shown(page, lambda s: s.get_by_role("option", name=option, exact=True)).click()
    idle(page)


def assert_no_exception(page, server: Server | None = None) -> None:
    errors = screen(page).locator("[data-testid='stException']")
    if errors.count():
        detail = errors.first.inner_text()
        if server is not None:
            detail += "\n--- server output ---\n" + server_output(server)[-4000:]
        raise AssertionError(detail)


def assert_nothing_ran(page) -> None:
    """No payload script ran: in the page and in every frame (st.html, st.iframe, ...)."""
    idle(page)
    assert page.evaluate("window.__pwned") is None, "a payload ran in the page"
    for frame in page.frames:
        assert frame.evaluate("window.__pwned") is None, f"a payload ran in frame {frame.url}"


# -- the data editor (glide-data-grid) ---------------------------------------------------------

def editor(page, key: str):
    """The data editor whose widget key is ``key``, scrolled to the middle of the window."""
    box = shown(page, lambda s: s.locator(f".st-key-{key}:has([data-testid='data-grid-canvas'])"))
    box.evaluate("e => e.scrollIntoView({block: 'center'})")
    return box


def grid_cell(page, key: str, row: int, col: int):
    """The accessibility cell of a data cell: ``row`` 0 is the first data row, ``col`` 0 the
    first data column (the grid's own column 0 is the row marker)."""
    return screen(page).locator(_cell_css(key, row, col))


def _cell_css(key: str, row: int, col: int) -> str:
    return f".st-key-{key} td#glide-cell-{col + 1}-{row}"


def _wait_selected(page, key: str, row: int, col: int, timeout: float) -> None:
    # A fresh query each time: the grid re-creates these cells as it redraws.
    screen(page).locator(_cell_css(key, row, col) + "[aria-selected='true']").wait_for(
        state="attached", timeout=timeout)


def _wait_text(page, key: str, row: int, col: int, text: str) -> None:
    until(page, "([css, text]) => document.querySelector(css)?.textContent === text",
          [_cell_css(key, row, col), text])


def select_cell(page, key: str, row: int, col: int) -> None:
    """Select a data cell as a user would: click its row in the first data column, then
    arrow right. (Column widths are not in the DOM; row heights follow from the canvas
    height and the row count, header and a dynamic editor's empty row for adding included.)"""
    # The row marker column is ~30 px wide; +50 px lands in the first data column. The
    # first click on a grid can be taken by the focus moving in from another grid: the cell's
    # aria-selected says whether it landed; if not, measure the idle page again and click
    # once more (never a selected cell: that would open its editor).
    first = grid_cell(page, key, row, 0)
    for _ in range(4):
        if first.get_attribute("aria-selected") == "true":
            break
        box = editor(page, key)
        lines = int(box.locator("table[role='grid']").get_attribute("aria-rowcount"))
        bb = box.locator("[data-testid='data-grid-canvas']").bounding_box()
        row_height = bb["height"] / lines
        page.mouse.click(bb["x"] + 50, bb["y"] + row_height * (row + 1.5))
        try:
            _wait_selected(page, key, row, 0, timeout=2_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError(f"could not select row {row} of {key}")
    for _ in range(col):
        page.keyboard.press("ArrowRight")
    _wait_selected(page, key, row, col, timeout=5_000)


def type_into_cell(page, key: str, row: int, col: int, text: str) -> None:
    """Replace a text cell's value: select it, type (which opens the cell editor), Enter."""
    select_cell(page, key, row, col)
    page.keyboard.type(text[0])
    box = shown(page, lambda s: s.locator("#portal textarea.gdg-input"))
    box.fill(text)
    box.press("Enter")
    box.wait_for(state="detached")
    _wait_text(page, key, row, col, text)


def choose_in_cell(page, key: str, row: int, col: int, option: str) -> None:
    """Set a select-box cell: select it, Enter opens its menu, click the option."""
    select_cell(page, key, row, col)
    page.keyboard.press("Enter")
    menu = shown(page, lambda s: s.locator("#portal [role='listbox']"))
    menu.get_by_role("option", name=option, exact=True).click()
    menu.wait_for(state="detached")
    _wait_text(page, key, row, col, option)
