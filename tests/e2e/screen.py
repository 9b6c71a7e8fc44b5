"""The one way a browser test reads the page (issue 56 item 5): wait until Streamlit is idle,
then read the newest render.

Streamlit redraws the page on every rerun. While a run is in flight the elements of the
previous run stay, marked ``data-stale="true"``, beside the new ones; a locator read then can
match the old and the new card together (a strict-mode error: ``get_by_text("never shown to
you")`` resolved to 2 elements under load) or pass on the old one (a stale read). And a click
is sent to the server a moment after Playwright returns from it, so "the app is idle" read
right after an action can be the idle *before* the action's run.

So every test reads through this module:

- :func:`new_page` (and the ``page`` fixture, through :func:`watch`) gives each page a small
  script that marks a rerun request as pending from the moment the browser sends it (the
  WebSocket ``BackMsg`` whose field is ``rerun_script``) until the server reports a run
  finished after it (``ForwardMsg.script_finished``);
- :func:`idle` waits until ``[data-testid='stApp'][data-test-script-state='notRunning']``,
  connected, no request pending, no stale element and no skeleton (an element whose code is
  still loading: on a loaded machine a table stood as a skeleton for seconds after the run
  ended, with nothing else moving), and that *stays* so across two reads
  :data:`QUIET_MS` apart with no input, no run and nothing drawn in between (a data grid
  attaches its cells after the run; a read mid-way missed a table);
- :func:`screen` is :func:`idle` and then the page as a :class:`Screen`, whose locators match
  only elements of the newest render (never inside a ``data-stale`` element);
- :func:`shown` waits until what a test looks for is in an idle page's newest render (each
  rerun re-read), and returns its locator; :func:`until` does the same for a condition in
  the page's script (a drawing's data, a grid cell).

Nothing here retries an action: a test that needs that is redesigned (issue 56).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

IDLE_CEILING_MS = 150_000  # a page run after a model call can take minutes on 2 shared cores
PAGE_CEILING_MS = 90_000  # every Playwright wait without its own
LOOK_MS = 30_000  # how long shown() looks for what the page should show
QUIET_MS = 400  # idle for this long, with no run started, before a read
POLL_MS = 100
_calls = 0  # idle() calls so far (see _IDLE)

# Installed in every document before Streamlit's own scripts. A rerun request is pending from
# the moment the browser sends it (BackMsg field 11, rerun_script: tag byte (11 << 3) | 2 =
# 0x5a) until the server says a run finished after it (ForwardMsg field 6, script_finished,
# with any status but 2, "finished early for a rerun"): the app's script state alone cannot
# say it, because a short run's "running" may never reach the DOM (React draws running and
# notRunning in one go). Every script state other than notRunning that is drawn counts a run.
HOOK = r"""(() => {
  if (window.__wbScreen) return;
  const s = window.__wbScreen = {pending: false, runs: 0, sends: 0, inputs: 0};
  // What a person (or Playwright) does to the page: a click's rerun request is sent a moment
  // after the click returns, so an input since the last idle read means "wait again".
  for (const type of ["pointerdown", "keydown", "input", "change", "drop", "paste"])
    window.addEventListener(type, () => { s.inputs += 1; }, true);
  const finished = (buffer) => {  // a ForwardMsg's script_finished status, or null
    const b = new Uint8Array(buffer);
    let i = 0;
    const varint = () => {
      let x = 0, scale = 1, c;
      do { c = b[i++]; x += (c & 0x7f) * scale; scale *= 128; } while (c & 0x80 && i < b.length);
      return x;
    };
    while (i < b.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag & 7;
      if (wire === 0) { const v = varint(); if (field === 6) return v; }
      else if (wire === 2) { const n = varint(); i += n; }  // not i += varint(): i is read first
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return null;
    }
    return null;
  };
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    try {
      if (!this.__wbWatched) {
        this.__wbWatched = true;
        this.addEventListener("message", (event) => {
          if (!(event.data instanceof ArrayBuffer)) return;
          const status = finished(event.data);
          if (status !== null && status !== 2) s.pending = false;
        });
      }
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
        : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, 1) : null;
      if (bytes && bytes[0] === 0x5a) { s.pending = true; s.sends += 1; }
    } catch (e) { /* never in the way of the app's own send */ }
    return send.call(this, data);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      const v = r.target.getAttribute("data-test-script-state");
      if (v && v !== "notRunning" && v !== "initial") s.runs += 1;
    }
  }).observe(document, {subtree: true, attributes: true,
                        attributeFilter: ["data-test-script-state"]});
  // What is drawn after a run without one: a data grid attaches its cells, a chart its
  // marks, a component its content. Two reads agree only when nothing was added meanwhile.
  s.drawn = 0;
  new MutationObserver((records) => { s.drawn += records.length; })
    .observe(document, {subtree: true, childList: true, characterData: true});
})();"""

# True once the app has been idle (see idle()) for `quiet` ms with no input, request, run or
# drawing meanwhile, counted from within this call (`call`: a fresh number per idle(), so the quiet
# time of an earlier call, before the action that followed it, never counts); at once when
# nothing at all happened since the last call that returned.
_IDLE = r"""([quiet, call]) => {
  const s = window.__wbScreen;
  if (!s) throw new Error("this page was opened without tests/e2e/screen.py's hook: "
                          + "make it with screen.new_page() or the page fixture");
  const app = document.querySelector("[data-testid='stApp']");
  const idle = app && app.getAttribute("data-test-script-state") === "notRunning"
    && app.getAttribute("data-test-connection-state") === "CONNECTED"
    && !s.pending && !document.querySelector("[data-stale='true'], [data-testid='stSkeleton']");
  const now = performance.now(), mark = `${s.runs}/${s.sends}/${s.inputs}/${s.drawn}`;
  // Nothing happened since the last idle read (no input, request or run): still idle.
  if (s.call !== call && idle && s.settled === mark) return true;
  if (s.call !== call) { s.call = call; s.since = null; }
  if (!idle) { s.since = null; return false; }
  if (s.since == null || s.seen !== mark) { s.since = now; s.seen = mark; return false; }
  if (now - s.since < quiet) return false;
  s.settled = mark;
  return true;
}"""

# Elements of the newest render: not a stale element nor inside one.
FRESH = "xpath=//*[not(ancestor-or-self::*[@data-stale='true'])]"


def watch(context) -> None:
    """Give every page of ``context`` the hook :func:`idle` reads (call before new_page)."""
    context.add_init_script(HOOK)


def new_page(browser, width: int = 1400, height: int = 1000, **options: Any):
    """A page in a fresh browser context (a person of their own: no shared cookie), watched,
    with the suite's ceilings; ``options`` go to ``browser.new_context`` (e.g.
    ``color_scheme``). Close it with ``page.context.close()``."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    watch(context)
    page = context.new_page()
    page.set_default_timeout(PAGE_CEILING_MS)
    expect.set_options(timeout=LOOK_MS)
    return page


def idle(page, timeout: float = IDLE_CEILING_MS) -> None:
    """Wait until Streamlit is idle and stays so for :data:`QUIET_MS` (see the module)."""
    global _calls
    _calls += 1
    page.wait_for_function(_IDLE, arg=[QUIET_MS, _calls], timeout=timeout, polling=POLL_MS)


class Screen:
    """The page's newest render: every locator made here leaves out stale elements."""

    def __init__(self, page):
        self.page = page

    def _fresh(self, locator):
        return locator.and_(self.page.locator(FRESH))

    def locator(self, selector: str, **kwargs: Any):
        return self._fresh(self.page.locator(selector, **kwargs))

    def get_by_text(self, text, **kwargs: Any):
        return self._fresh(self.page.get_by_text(text, **kwargs))

    def get_by_role(self, role: str, **kwargs: Any):
        return self._fresh(self.page.get_by_role(role, **kwargs))

    def get_by_label(self, text, **kwargs: Any):
        return self._fresh(self.page.get_by_label(text, **kwargs))

    def get_by_placeholder(self, text, **kwargs: Any):
        return self._fresh(self.page.get_by_placeholder(text, **kwargs))

    def get_by_test_id(self, test_id: str):
        return self._fresh(self.page.locator(f"[data-testid='{test_id}']"))

    @property
    def main(self):
        return self.locator("[data-testid='stMain']")

    @property
    def sidebar(self):
        return self.locator("[data-testid='stSidebar']")

    def content(self) -> str:
        """The page's HTML as it stands (read once idle)."""
        return self.page.content()

    def evaluate(self, script: str, arg: Any = None) -> Any:
        """Run ``script`` on the idle page (e.g. measuring what is drawn)."""
        return self.page.evaluate(script, arg)


def screen(page, timeout: float = IDLE_CEILING_MS) -> Screen:
    """:func:`idle`, then the page's newest render."""
    idle(page, timeout)
    return Screen(page)


def shown(page, find: Callable[[Screen], Any], timeout: float = LOOK_MS,
          idle_timeout: float = IDLE_CEILING_MS):
    """Wait until ``find(screen)`` matches an element of an idle page's newest render, and
    return that locator. Each look waits for idle first (a page still running is not
    looked at), so a match is never an element of a render that is being replaced;
    ``timeout`` bounds the looking, ``idle_timeout`` each wait for idle."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        found = find(screen(page, idle_timeout))
        if found.count():
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"not shown within {timeout / 1000:.0f} s: {found}")
        try:  # until it appears (or the page changes), then look again in an idle page
            found.first.wait_for(state="attached", timeout=min(left * 1000, 2_000))
        except Exception:  # Playwright's TimeoutError: look again
            pass


def gone(page, find: Callable[[Screen], Any], timeout: float = LOOK_MS) -> None:
    """Wait until ``find(screen)`` matches nothing in an idle page's newest render."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        found = find(screen(page))
        if not found.count():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still shown after {timeout / 1000:.0f} s: {found}")
        try:
            found.first.wait_for(state="detached", timeout=2_000)
        except Exception:
            pass


def until(page, script: str, arg: Any = None, timeout: float = LOOK_MS) -> Any:
    """Wait until ``script`` (a JS function of ``arg``) is truthy on an idle page, re-read
    after each rerun; returns its value. For what the page's own scripts hold (a drawing's
    data, a grid cell's text), which locators do not reach."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        idle(page)
        value = page.evaluate(script, arg)
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"not true within {timeout / 1000:.0f} s: {script[:200]}")
        try:
            page.wait_for_function(script, arg=arg, timeout=min(left * 1000, 2_000),
                                   polling=POLL_MS)
        except Exception:
            pass
