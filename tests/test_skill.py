from __future__ import annotations

import pytest

from workbench.llm.tokens import count_tokens
from workbench.skill.document import (
    SkillFormatError,
    decode_skill_bytes,
    parse_skill,
    read_skill,
    split_blocks,
    split_long_blocks,
)

DOC = """---
name: demo-skill
description: "Handles refunds: cancellations and returns."
---
Intro paragraph.

# Refunds
Refund rules.

```markdown
# Not a heading (inside a fence)
```

## Partial refunds
~~~
## also not a heading
~~~
Coupon text.
### Deep
Last.
"""


def test_front_matter_and_blocks_keep_offsets():
    doc = parse_skill(DOC)
    assert doc.name == "demo-skill"
    assert doc.description == "Handles refunds: cancellations and returns."
    assert doc.warnings == []
    assert [b.heading for b in doc.blocks] == [None, "Refunds", "Partial refunds", "Deep"]
    assert [b.level for b in doc.blocks] == [0, 1, 2, 3]
    for b in doc.blocks:
        assert DOC[b.start : b.end] == b.text
    # blocks tile the body without gaps
    assert doc.blocks[0].start == doc.body_start
    for a, b in zip(doc.blocks, doc.blocks[1:], strict=False):
        assert a.end == b.start
    assert doc.blocks[-1].end == len(DOC)
    assert "# Not a heading" in doc.blocks[1].text
    assert "## also not a heading" in doc.blocks[2].text


def test_no_front_matter_takes_first_heading_and_says_so():
    doc = parse_skill("Some words.\n# Baggage Policy\nRules.\n")
    assert doc.name == "Baggage Policy"
    assert any("no YAML front matter" in w for w in doc.warnings)
    assert any("first heading" in w for w in doc.warnings)


def test_no_heading_takes_file_name(tmp_path):
    folder = tmp_path / "pet-policy"
    folder.mkdir()
    (folder / "SKILL.md").write_text("Just text, no heading.\n")
    doc = read_skill(folder)
    assert doc.name == "pet-policy"
    assert any("file name" in w for w in doc.warnings)
    assert len(doc.blocks) == 1 and doc.blocks[0].heading is None


def test_front_matter_only_has_no_blocks_and_warns():
    doc = parse_skill("---\nname: empty\ndescription: nothing\n---\n")
    assert doc.blocks == []
    assert any("no body" in w for w in doc.warnings)


def test_bad_yaml_is_a_clear_error():
    with pytest.raises(SkillFormatError, match="front matter does not parse"):
        parse_skill("---\nname: [unclosed\n---\nbody\n")
    with pytest.raises(SkillFormatError, match="must be a YAML mapping"):
        parse_skill("---\n- a\n- b\n---\nbody\n")
    with pytest.raises(SkillFormatError, match="cannot name this SKILL"):
        parse_skill("no heading here")


def test_non_utf8_bytes_are_replaced_with_a_warning():
    text, warnings = decode_skill_bytes(b"# T\ncaf\xe9 rules\n", "x.md")
    assert "\ufffd" in text
    assert "offset 7" in warnings[0]


def test_headings_need_a_space_and_hashtags_are_not_headings():
    blocks = split_blocks("#hashtag\n# Real\n####### seven\n")
    assert [b.heading for b in blocks] == [None, "Real"]


def test_split_long_blocks_at_paragraphs_keeps_offsets():
    para = "word " * 60
    text = "# Big\n" + "\n\n".join(f"P{i} {para}" for i in range(10)) + "\n"
    blocks = split_blocks(text)
    assert len(blocks) == 1
    limit = count_tokens(blocks[0].text) // 3
    parts = split_long_blocks(blocks, limit)
    assert len(parts) >= 3
    assert "".join(p.text for p in parts) == blocks[0].text
    for p in parts:
        assert text[p.start : p.end] == p.text
        assert count_tokens(p.text) <= limit + 5
    assert [p.index for p in parts] == list(range(len(parts)))
