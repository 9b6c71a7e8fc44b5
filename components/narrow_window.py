"""The sidebar folds away in a narrow window (issue 56 item 3): below :data:`BELOW` px its
300 px took most of an 800 px laptop window, and the page beside it cut its labels and
buttons ("Add edge MOR-C0…" in a 110 px rule panel).

Streamlit folds the sidebar by itself only on a phone (``initial_sidebar_state="auto"``, at
768 px and below) and cannot know the window's width on the server. A Components-v2 script
runs in the app's own document: when the window is narrower than :data:`BELOW` it presses the
sidebar's own "Collapse sidebar" button, once when the page loads and again each time the
window becomes narrow, so the person can open the sidebar again with its arrow (it is not
pressed again until the window has been wide in between)."""

from __future__ import annotations

import streamlit as st

BELOW = 1000  # px of window width from which the sidebar stays open

_JS = """
export default function (component) {
  const below = (component.data || {}).below || 1000;
  if (window.__wbNarrowSidebar) return;  // once per page load: the listener below stays
  window.__wbNarrowSidebar = true;
  const narrow = window.matchMedia("(max-width: " + (below - 1) + "px)");
  // The page says it has settled (data-wb-narrow-sidebar) only once the fold is done or
  // given up, so a person's (or a test's) opening of the sidebar is never undone after it.
  const settled = () =>
    document.documentElement.setAttribute("data-wb-narrow-sidebar", String(below));
  const collapse = (tries) => {
    const button = document.querySelector(
      "[data-testid='stSidebarCollapseButton'] button[aria-expanded='true']");
    if (button) { button.click(); settled(); return; }
    // The sidebar is drawn in the same run as this script: wait a few frames for it.
    if (tries > 0 && !document.querySelector("[data-testid='stExpandSidebarButton']"))
      requestAnimationFrame(() => collapse(tries - 1));
    else settled();
  };
  if (narrow.matches) collapse(120); else settled();
  narrow.addEventListener("change", (event) => { if (event.matches) collapse(120); });
}
"""

_component = st.components.v2.component("workbench_narrow_window", js=_JS)


def fold_sidebar_when_narrow() -> None:
    """Draw the (invisible) script; call once per run, from the app's entry point."""
    _component(key="wb_narrow_window", data={"below": BELOW})
