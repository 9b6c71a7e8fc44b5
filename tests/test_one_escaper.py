"""Issue #17 item 4: one Markdown escaper (``components.safe.md``), used by every page and
component that puts policy, conversation, model or user text into Markdown."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from components.safe import md
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = [
    "<script>alert(1)</script>",
    "**bold** and __bold__",
    "[x](javascript:alert(1))",
    "![img](http://evil.invalid/i.png)",
    "$E = mc^2$ and $$x$$",
    "`code` and ```fence```",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_every_markdown_special_character_is_backslashed(text):
    out = md(text)
    # Each special character is preceded by a backslash, so Markdown shows it as itself.
    for i, ch in enumerate(out):
        if ch in "<>*_[]()$`!:":
            assert out[i - 1] == "\\", (text, out, i)
    assert out.replace("\\", "") == text


def _escaper_definitions() -> list[str]:
    """Functions in components/ and pages/ that escape with a regular expression of Markdown
    punctuation: only components/safe.py may hold one."""
    found = []
    for folder in ("components", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and "\\`*_{}" in node.value:
                    found.append(str(path.relative_to(ROOT)))
    return found


def test_one_escaper_in_components_and_pages():
    assert _escaper_definitions() == ["components/safe.py"]


SCALING_WARNING = """
import streamlit as st
from components.safe import md
st.warning(", ".join(md(p) for p in ["<script>x</script>", "[a](javascript:x)", "$m$"]))
"""


def test_hostile_text_in_an_alert_renders_as_text():
    at = AppTest.from_string(SCALING_WARNING).run()
    shown = at.warning[0].value
    assert "<script>" not in shown and "](" not in shown and "$m$" not in shown
    assert shown.replace("\\", "") == "<script>x</script>, [a](javascript:x), $m$"


def test_annotate_flash_messages_escape_what_they_quote(tmp_path, monkeypatch, refund_index_data):
    """The Annotate page's messages (they used components/annotation.py's own escaper) quote
    the annotator's input; every hostile form comes back as text."""
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex

    url = f"sqlite:///{tmp_path / 'annotate.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.from_dict(refund_index_data), actor=COMMAND_LINE)
    eng.dispose()
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.session_state["identity"] = {"name": "ada", "role": "annotator"}
    at.run()
    at.radio(key="ann_mode").set_value("Reference inventory").run()
    hostile = " ".join(HOSTILE)
    at.text_input(key="ref_condition").set_value("x")
    at.text_input(key="ref_action").set_value("y")
    at.text_area(key="ref_quote").set_value(hostile)
    next(b for b in at.button if b.label == "Add reference rule").click().run()
    shown = at.error[0].value
    assert "not in the SKILL source" in shown
    for raw in ("<script>", "**bold**", "](javascript", "$E", "`code`"):
        assert raw not in shown, raw
    assert hostile[:40] in shown.replace("\\", "")
