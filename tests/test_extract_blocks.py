"""Planning extraction blocks: stable unique keys, splitting under a token limit."""

from __future__ import annotations

from workbench.extract.blocks import halve, plan_blocks, slugify, split_range
from workbench.llm.tokens import count_tokens
from workbench.skill.document import parse_skill

DOC = (
    "---\nname: p\ndescription: d\n---\nIntro line: the agent must be polite.\n\n"
    "# Policy\n\n## Refunds\nRefund rule.\n\n## Refunds\nSecond refunds section.\n\n"
    "## Gift cards & vouchers!\nVoucher rule.\n"
)


def test_keys_are_slugs_unique_and_cover_the_body():
    doc = parse_skill(DOC)
    blocks = plan_blocks(doc, 12_000)
    assert [b.key for b in blocks] == ["intro", "policy", "refunds", "refunds-2", "gift-cards-vouchers"]
    assert [b.section for b in blocks][2:] == ["Policy > Refunds", "Policy > Refunds",
                                               "Policy > Gift cards & vouchers!"]
    assert blocks[0].start == doc.body_start and blocks[-1].end == len(DOC)
    assert all(DOC[b.start:b.end] == b.text for b in blocks)
    assert blocks[1].is_empty and not blocks[2].is_empty


def test_keys_do_not_depend_on_position():
    edited = DOC.replace("# Policy\n", "# Policy\n\n## New first section\nNew text.\n")
    before = {b.key: b.text for b in plan_blocks(parse_skill(DOC), 12_000)}
    after = {b.key: b.text for b in plan_blocks(parse_skill(edited), 12_000)}
    assert set(after) - set(before) == {"new-first-section"}
    assert all(after[k] == v for k, v in before.items() if k != "policy")


def test_long_blocks_split_into_parts_under_the_limit():
    body = "\n\n".join(f"Paragraph {n}: the agent must file form {n} within two days." for n in range(60))
    doc = parse_skill(f"# Forms\n\n{body}\n")
    blocks = plan_blocks(doc, 100)
    assert len(blocks) > 5
    assert all(b.tokens <= 100 for b in blocks)
    assert [b.key for b in blocks[:2]] == ["forms-p1", "forms-p2"]
    assert blocks[1].section.startswith("Forms (part 2 of ")
    assert "".join(b.text for b in blocks) == doc.source


def test_one_huge_line_is_cut_at_sentence_ends():
    text = " ".join(f"Rule {n} says the agent must stop." for n in range(200))
    ranges = split_range(text, 0, len(text), 50)
    assert all(count_tokens(text[a:b]) <= 50 for a, b in ranges)
    assert all(text[a:b].startswith("Rule") for a, b in ranges)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(text)


def test_halve_prefers_paragraphs_and_refuses_tiny_pieces():
    text = "First paragraph has several words in it.\n\nSecond paragraph has several words too."
    (a, b), (c, d) = halve(text, 0, len(text))
    assert text[a:b].endswith("\n\n") and text[c:d].startswith("Second") and b == c
    assert halve("Too short.", 0, 10) is None


def test_slugify_handles_symbols_and_length():
    assert slugify("  ##  ", "section") == "section"
    assert slugify("Ré­embolsements", "x").startswith("ré")
    assert len(slugify("word " * 40, "x")) <= 32
