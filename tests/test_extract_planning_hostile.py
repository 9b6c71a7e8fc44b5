"""Block planning on hostile shapes in near-linear work, with the plans of before (issue 36).

The plans are checked against the specification — the key search and the splitting as they
were, written out here (where a range may be cut is the module's ``coarsest_cuts``: the issue
changed how much work planning does, not where it cuts) — on every fixture SKILL and on random
texts; the work is counted (key candidates tried, characters given to the tokenizer), not
timed (bench/block_planning.py prints the times)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from workbench.extract import blocks as blocks_mod
from workbench.extract.blocks import _Keys, coarsest_cuts, heading_paths, plan_blocks, slugify
from workbench.llm.tokens import LONGEST_TOKEN_BYTES, count_tokens, count_tokens_upto, longest_token_bytes
from workbench.skill.document import parse_skill

ROOT = Path(__file__).resolve().parents[1]
FRONT = "---\nname: hostile\ndescription: planning\n---\n\n"


# -- the specification: planning as it was before the issue ------------------------------------

def spec_unique(key: str, used: set[str]) -> str:
    candidate, n = key, 1
    while candidate in used:
        n += 1
        candidate = f"{key}-{n}"
    used.add(candidate)
    return candidate


def spec_pack(text, pieces, max_tokens):
    out, cur_start, cur_tokens = [], pieces[0][0], 0
    for a, b in pieces:
        t = count_tokens(text[a:b])
        if cur_tokens and cur_tokens + t > max_tokens:
            out.append((cur_start, a))
            cur_start, cur_tokens = a, 0
        cur_tokens += t
    out.append((cur_start, pieces[-1][1]))
    return out


def spec_split(text, start, end, max_tokens):
    if count_tokens(text[start:end]) <= max_tokens:
        return [(start, end)]
    cuts = coarsest_cuts(text, start, end)
    if not cuts:
        return [(start, end)]
    result = []
    for a, b in spec_pack(text, list(zip([start, *cuts], [*cuts, end], strict=True)), max_tokens):
        if (a, b) != (start, end) and count_tokens(text[a:b]) > max_tokens:
            result.extend(spec_split(text, a, b, max_tokens))
        else:
            result.append((a, b))
    return result


def spec_plan(doc, max_tokens):
    planned, used = [], set()
    for block, path in zip(doc.blocks, heading_paths(doc.blocks), strict=True):
        base = spec_unique(slugify(block.heading, "intro" if block.heading is None else "section"), used)
        ranges = spec_split(block.text, 0, len(block.text), max_tokens)
        for n, (a, b) in enumerate(ranges, 1):
            key = base if len(ranges) == 1 else spec_unique(f"{base}-p{n}", used)
            label = path if len(ranges) == 1 else f"{path} (part {n} of {len(ranges)})"
            planned.append((key, label, block.heading, block.start + a, block.start + b))
    return planned


def plan_tuples(doc, max_tokens):
    return [(p.key, p.section, p.heading, p.start, p.end) for p in plan_blocks(doc, max_tokens)]


FIXTURE_SKILLS = sorted(p for p in (ROOT / "fixtures").rglob("*.md") if p.name != "NOTICE.md"
                        and p.name != "README.md")


@pytest.mark.parametrize("path", FIXTURE_SKILLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_skills_plan_as_before(path):
    doc = parse_skill(path.read_text(encoding="utf-8", errors="replace"), path)
    for max_tokens in (40, 300, 1200):
        assert plan_tuples(doc, max_tokens) == spec_plan(doc, max_tokens)


def random_skill(rnd: random.Random) -> str:
    parts = [FRONT]
    for _ in range(rnd.randint(1, 40)):
        head = rnd.choice(["Notes", "Notes 2", "notes-2", "", "Refunds", "Notes-p2", "section"])
        parts.append(f"{'#' * rnd.randint(1, 3)} {head}\n")
        for _ in range(rnd.randint(0, 6)):
            words = " ".join(rnd.choice(["refund", "the", "order.", "Never;", "x" * rnd.randint(1, 40)])
                             for _ in range(rnd.randint(1, 60)))
            parts.append(words + rnd.choice(["\n", "\n\n", " "]))
    return "".join(parts)


def test_random_skills_plan_as_before():
    rnd = random.Random(36)
    for _ in range(60):
        doc = parse_skill(random_skill(rnd), "r/SKILL.md")
        max_tokens = rnd.choice([8, 30, 120, 1200])
        assert plan_tuples(doc, max_tokens) == spec_plan(doc, max_tokens)


def test_keys_are_the_first_free_ones_as_before():
    rnd = random.Random(5)
    for _ in range(200):
        keys, used = _Keys(), set()
        for _ in range(rnd.randint(1, 60)):
            key = rnd.choice(["notes", "notes-2", "notes-3", "notes-2-2", "intro", "section"])
            assert keys.unique(key) == spec_unique(key, used)


class CountingSet(set):
    checks = 0

    def __contains__(self, item):
        CountingSet.checks += 1
        return super().__contains__(item)


def test_twenty_thousand_equal_headings_cost_linear_key_work():
    keys = _Keys()
    keys.used = CountingSet()
    CountingSet.checks = 0
    got = [keys.unique("notes") for _ in range(20_000)]
    assert got[:3] == ["notes", "notes-2", "notes-3"] and len(set(got)) == 20_000
    assert CountingSet.checks <= 2 * 20_000  # the old search tried ~200 million candidates


def test_a_ten_megabyte_line_is_tokenized_about_once(monkeypatch):
    import workbench.llm.tokens as tokens_mod
    import workbench.skill.document as skill_mod

    counted = [0]

    def counting(text: str) -> int:
        counted[0] += len(text)
        return count_tokens(text)

    for module in (tokens_mod, skill_mod, blocks_mod):  # wherever planning counts
        monkeypatch.setattr(module, "count_tokens", counting)
    line = "The agent refunds the order to the original payment method. " * 170_000  # ~10 MB
    doc = parse_skill(FRONT + line, "big/SKILL.md")
    planned = plan_blocks(doc, 1200)
    assert len(planned) > 1000 and planned[-1].end == len(doc.source)
    # Before: the whole line was counted at every level (5 passes, one of them 10 MB at once).
    assert counted[0] <= 2.2 * len(line)


def test_count_tokens_upto_is_exact_or_surely_over():
    assert count_tokens_upto("refund the order", 100) == count_tokens("refund the order")
    assert count_tokens_upto("a" * (LONGEST_TOKEN_BYTES * 10 + 1), 10) == 11
    assert count_tokens("a" * (LONGEST_TOKEN_BYTES * 10 + 1)) > 10  # the shortcut's premise


def test_the_longest_token_is_what_the_shortcut_assumes():
    assert longest_token_bytes() == LONGEST_TOKEN_BYTES
