from components.safe import md
from components.spans import highlighted_html, merge_spans
from workbench.graph import Span


def test_markdown_escape_neutralises_images_links_and_code():
    hostile = "![x](http://evil/i.png) [a](http://e) `code` <b>*bold*</b>"
    out = md(hostile)
    assert "![" not in out and "](" not in out
    assert out.count("\\") >= 10


def test_highlight_escapes_text_and_marks_spans():
    src = "a <script>x</script> b & c"
    out = highlighted_html(src, [Span(2, 20)])
    assert "<script>" not in out
    assert '<mark id="span-2">&lt;script&gt;x&lt;/script&gt;</mark>' in out
    assert out.endswith(" b &amp; c")


def test_merge_and_context_window():
    assert merge_spans([Span(5, 9), Span(1, 3), Span(2, 6)]) == [Span(1, 9)]
    src = "0123456789" * 10
    out = highlighted_html(src, [Span(50, 52)], context_chars=5)
    assert out.startswith("…56789<mark") and out.endswith("23456…")
