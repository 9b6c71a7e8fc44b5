"""Every browser test reads the page through ``tests/e2e/screen.py`` (issue 56 item 5): it
waits until Streamlit is idle and reads the newest render. A locator made on the bare page,
a wait of its own on Streamlit's script state, a fixed sleep or a browser context made
without the screen's hook would bring back the reads that failed under load (a strict-mode
error from the old and the new card, a read before the click's run). This test reads the
test files (no browser): each finding names the file, the line and what to use instead."""

from __future__ import annotations

import ast
from pathlib import Path

E2E = Path(__file__).resolve().parent / "e2e"
HELPER = E2E / "screen.py"

# Names a test gives a Playwright page (the fixture's, a second person's, a new tab).
PAGE_NAMES = {"page", "pg", "pasted", "rita", "author", "analyst", "bea", "watched", "laptop"}
READS = {"get_by_text", "get_by_role", "get_by_label", "get_by_placeholder", "get_by_test_id",
         "get_by_title", "get_by_alt_text", "locator", "content", "eval_on_selector",
         "eval_on_selector_all", "query_selector", "query_selector_all", "inner_text",
         "text_content"}
WAITS = {"wait_for_selector": "screen.shown(page, lambda s: s.locator(...))",
         "wait_for_function": "screen.until(page, js, arg)",
         "wait_for_timeout": "screen.idle(page), or shown()/until() for what you wait for",
         "new_context": "screen.new_page(browser, width, height) (it installs the hook)"}


def findings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "data-test-script-state" in node.value:
            out.append(f"{path.name}:{node.lineno}: Streamlit's script state read by hand; "
                       "use screen.idle(page)")
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name in WAITS:
            out.append(f"{path.name}:{node.lineno}: .{name}(); use {WAITS[name]}")
        elif name in READS and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in PAGE_NAMES:
            out.append(f"{path.name}:{node.lineno}: {node.func.value.id}.{name}() reads the bare "
                       f"page; use screen({node.func.value.id}).{name}() or shown()")
    return out


def test_every_browser_test_reads_through_the_screen_helper():
    problems = [f for path in sorted(E2E.glob("*.py")) if path != HELPER for f in findings(path)]
    assert not problems, "\n".join(problems)


def test_the_check_finds_a_bare_read(tmp_path):
    """The positive control: each kind of finding is found."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "def test_x(page, browser):\n"
        "    page.get_by_text('x').wait_for()\n"
        "    page.wait_for_timeout(500)\n"
        "    page.wait_for_selector(\"[data-testid='stApp'][data-test-script-state='notRunning']\")\n"
        "    browser.new_context()\n"
        "    screen(page).get_by_text('fine')\n")
    found = findings(probe)
    assert [f.split(": ", 1)[0] for f in found].count("test_probe.py:4") == 2, found
    assert any("page.get_by_text() reads the bare page" in f for f in found)
    assert any(".wait_for_timeout()" in f for f in found)
    assert any(".new_context()" in f for f in found)
    assert not any("test_probe.py:6" in f for f in found)
