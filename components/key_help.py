"""The ``?`` keyboard-help overlay of a keyboard-driven page (Review, Annotate): pressing ``?``
outside a text field, or the "Keyboard shortcuts (?)" button, shows every shortcut of the
page over it; ``Esc``, ``?`` again or a click closes it. It opens in the browser alone (no
rerun), so it is there at once, even while the page is busy.

Streamlit's button shortcuts take letters and named keys only, not punctuation, so ``?`` is
one listener in the page (``st.html`` with JavaScript). The script and the markup are ours;
the key names and descriptions are escaped, and no user, policy or model text goes in.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

# Theme-following colours (see components/queue_nav.py): inherited text, translucent tints.
_STYLE = """
<style>
#wb-key-help-overlay{position:fixed;inset:0;z-index:1000100;display:flex;align-items:center;
  justify-content:center;background:rgba(0,0,0,0.45)}
#wb-key-help-overlay .wb-key-help-box{background:var(--background-color,#fff);
  color:var(--text-color,inherit);border-radius:8px;padding:1.2rem 1.6rem;min-width:22rem;
  max-width:90vw;box-shadow:0 8px 30px rgba(0,0,0,0.35);border:1px solid rgba(128,128,128,0.4)}
#wb-key-help-overlay table{border-collapse:collapse}
#wb-key-help-overlay td{padding:0.2rem 0.8rem 0.2rem 0}
#wb-key-help-overlay kbd,.wb-key-help-open kbd{border:1px solid rgba(128,128,128,0.5);
  border-radius:3px;padding:0 5px;background:rgba(128,128,128,0.12)}
.wb-key-help-open{cursor:pointer;background:none;border:1px solid rgba(128,128,128,0.4);
  border-radius:6px;padding:0.15rem 0.6rem;color:inherit;font:inherit;font-size:0.85em}
</style>
"""

# Opens and closes the overlay; reads the key list from the template drawn beside it, so a
# rerun that changes the keys (another queue) shows the new ones. Installed once per page.
_SCRIPT = """
<script>
(function () {
  const doc = window.document;
  function close() { const o = doc.getElementById("wb-key-help-overlay"); if (o) o.remove(); }
  function open() {
    const t = doc.getElementById("wb-key-help-template");
    if (!t || doc.getElementById("wb-key-help-overlay")) return;
    const o = doc.createElement("div");
    o.id = "wb-key-help-overlay";
    o.setAttribute("role", "dialog");
    o.setAttribute("aria-label", "Keyboard shortcuts");
    o.setAttribute("data-testid", "wb-key-help");
    o.innerHTML = t.innerHTML;
    o.addEventListener("click", close);
    doc.body.appendChild(o);
  }
  window.wbKeyHelp = {open: open, close: close};
  if (window.wbKeyHelpInstalled) return;
  window.wbKeyHelpInstalled = true;
  // The button's own onclick would be stripped by Streamlit's sanitizer: listen here.
  doc.addEventListener("click", function (e) {
    if (e.target && e.target.closest && e.target.closest(".wb-key-help-open")) open();
  }, true);
  doc.addEventListener("keydown", function (e) {
    const el = doc.activeElement;
    const typing = el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA"
                          || el.isContentEditable);
    if (e.key === "Escape") { close(); return; }
    if (e.key === "?" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      if (doc.getElementById("wb-key-help-overlay")) close(); else open();
    }
  }, true);
})();
</script>
"""


def help_table(keys: Sequence[tuple[str, str]]) -> str:
    """The overlay's markup for ``(key, what it does)`` pairs, escaped."""
    rows = "".join(f"<tr><td><kbd>{html.escape(k)}</kbd></td><td>{html.escape(what)}</td></tr>"
                   for k, what in keys)
    return ("<div class='wb-key-help-box'><strong>Keyboard shortcuts</strong>"
            f"<table>{rows}</table><small>Keys work when no text field has the focus "
            "(press Tab or click beside it). Esc or ? closes this.</small></div>")


def key_help(keys: Sequence[tuple[str, str]]) -> None:
    """Draw the "Keyboard shortcuts (?)" button and install the ``?`` overlay listing
    ``keys`` (``("?", "show this help")`` is added)."""
    table = help_table([*keys, ("?", "show or hide this help")])
    st.html(
        _STYLE
        + f"<template id='wb-key-help-template'>{table}</template>"
        + "<button type='button' class='wb-key-help-open' data-testid='wb-key-help-open'>"
          "Keyboard shortcuts <kbd>?</kbd></button>"
        + _SCRIPT,
        unsafe_allow_javascript=True,
    )
