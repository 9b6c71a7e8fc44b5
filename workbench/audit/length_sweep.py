"""Length sweep (second SkillCDG paper, RQ3): the same cases against ever longer SKILLs.

Conversations and gold stay fixed; each case's SKILL is rebuilt at a controlled length by
adding clauses that do not apply to it: first the workflows of the domain's other intents
(as ``import-complibench --long`` does), then, once those run out, sections of other
domains' policies (``foreign`` Markdown files, e.g. tau-bench retail or telecom policies),
each paragraph or bullet one rule. The clauses are inserted before the SKILL's
condition-triggered section, so the case's own workflow and guidelines keep their rule ids
and the gold stays valid. A SKILL whose own part is already longer than a length is kept at
its own size (reported in ``LengthLevel.actual_tokens``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.complibench import (
    Conversation,
    Workflow,
    build_skill,
    conversation_cases,
    read_conversation,
    skill_name,
)
from workbench.audit.coverage_curve import CURVE_STRATEGIES
from workbench.audit.metrics import aligned_lines
from workbench.graph import PolicyIndex
from workbench.inputs import read_input_text
from workbench.tokens import count_tokens
from workbench.vocabulary import JudgeMode

DEFAULT_LENGTHS = (4000, 8000, 12000, 20000, 28000, 36000)
_COND_SECTION = "\n## Condition-triggered guidelines"


@dataclass(frozen=True)
class Clause:
    heading: str
    text: str


def _documents(paths: list[Path]) -> list[tuple[str, str]]:
    """(title, Markdown text) of each file: ``.md`` as is, ``.json`` knowledge-base documents
    with ``title`` and ``content`` (tau2-bench's banking documents); folders are searched."""
    import json

    files: list[Path] = []
    for path in paths:
        files += sorted(p for p in path.rglob("*") if p.suffix in (".md", ".json")) \
            if path.is_dir() else [path]
    out = []
    for f in files:
        text = read_input_text(f, "foreign policy document")  # not UTF-8: says so, with the fix
        if f.suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"{f}: not JSON ({exc}); foreign clauses come from .md files or "
                                 "JSON documents with 'title' and 'content'") from None
            if not isinstance(data, dict) or not isinstance(data.get("content"), str):
                raise ValueError(f"{f}: a JSON document needs a 'content' string")
            out.append((str(data.get("title") or f.stem), data["content"]))
        else:
            out.append((f.stem.replace("_", " "), text))
    return out


def foreign_clauses(paths: list[Path]) -> list[Clause]:
    """Paragraphs and bullets of other policies, with the heading they sit under."""
    out: list[Clause] = []
    for title, text in _documents(paths):
        heading = title
        for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", text):
            text = " ".join(block.split())
            m = re.match(r"^#+\s+(.*)$", text)
            if m:
                heading = f"{title}: {m.group(1)}"
                continue
            text = re.sub(r"^[-*]\s+", "", text)
            if len(text) >= 40:
                out.append(Clause(heading, text))
    return out


def _insert(skill: dict[str, Any], extra: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """``skill`` with ``extra`` text (holding ``rules``, offsets relative to it) inserted
    before its condition-triggered section; later spans shift."""
    src = skill["source"]
    at = src.find(_COND_SECTION)
    at = len(src) if at < 0 else at
    shift = len(extra)
    moved = []
    for r in skill["rules"]:
        spans = [{"start": s["start"] + (shift if s["start"] >= at else 0),
                  "end": s["end"] + (shift if s["start"] >= at else 0)} for s in r["spans"]]
        moved.append({**r, "spans": spans})
    added = [{**r, "spans": [{"start": s["start"] + at, "end": s["end"] + at} for s in r["spans"]]}
             for r in rules]
    return {**skill, "source": src[:at] + extra + src[at:], "rules": moved + added}


def _foreign_text(clauses: list[Clause], budget: int, prefix: str) -> tuple[str, list[dict]]:
    parts: list[str] = []
    rules: list[dict[str, Any]] = []
    size, used, heading = 0, 0, None
    for i, cl in enumerate(clauses):
        piece = ""
        if cl.heading != heading:
            piece += f"\n## Other policy: {cl.heading}\n\n"
            heading = cl.heading
        cost = count_tokens(piece + cl.text) + 1
        if used + cost > budget:
            break
        used += cost
        start = size + len(piece)
        parts.append(piece + cl.text + "\n")
        size += len(piece) + len(cl.text) + 1
        rules.append({"id": f"{prefix}{i + 1}", "condition": f"the {heading} policy applies",
                      "action": cl.text, "modality": "required",
                      "spans": [{"start": start, "end": start + len(cl.text)}]})
    return "".join(parts), rules


@dataclass
class LengthLevel:
    length: int
    index: PolicyIndex
    actual_tokens: float  # mean source tokens of the SKILLs at this level


def sweep_levels(
    src: str | Path,
    lengths: tuple[int, ...] = DEFAULT_LENGTHS,
    foreign: list[Path] | None = None,
    domain_label: str = "Celestar Air",
) -> tuple[list[LengthLevel], list[AuditCase]]:
    """One policy index per length (same SKILL names and gold rule ids) and the cases."""
    files = sorted(Path(src).rglob("conversation_*.json"))
    if not files:
        raise FileNotFoundError(f"{src}: no conversation_*.json files")
    convs: list[Conversation] = [read_conversation(f) for f in files]
    by_domain: dict[str, dict[tuple[str, int], Workflow]] = {}
    for c in convs:
        by_domain.setdefault(c.domain, {}).setdefault(c.workflow.key, c.workflow)
    clauses = foreign_clauses(list(foreign or []))
    firsts: dict[str, Conversation] = {}
    cases: list[AuditCase] = []
    for c in convs:
        name = skill_name(c.domain, c.workflow)
        firsts.setdefault(name, c)
        cases.extend(conversation_cases(c, name))
    levels = []
    for length in lengths:
        skills = []
        for name, c in firsts.items():
            others = [w for k, w in sorted(by_domain[c.domain].items()) if k != c.workflow.key]
            random.Random(f"sweep:{name}").shuffle(others)
            # The most same-domain distractors that fit (binary search: size grows with k).
            lo, hi = 0, len(others)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if count_tokens(build_skill(c, others[:mid], domain_label)["source"]) <= length:
                    lo = mid
                else:
                    hi = mid - 1
            skill = build_skill(c, sorted(others[:lo], key=lambda w: w.key), domain_label)
            room = length - count_tokens(skill["source"])
            if room > 50 and clauses and lo == len(others):
                extra, rules = _foreign_text(clauses, room, "other.")
                skill = _insert(skill, extra, rules)
            skills.append(skill)
        index = PolicyIndex.from_dict({"format": "skillcdg/1", "skills": skills},
                                      f"length sweep {length}")
        mean = sum(count_tokens(s["source"]) for s in skills) / max(len(skills), 1)
        levels.append(LengthLevel(length, index, mean))
    return levels, cases


@dataclass
class SweepRow:
    length: int
    skill_tokens: float
    strategy: str
    cases: int
    coverage: float
    mean_tokens: float
    errors: dict[str, int]


def run_sweep(
    levels: list[LengthLevel],
    cases: list[AuditCase],
    strategies: tuple[str, ...] = CURVE_STRATEGIES,
    options: Any = None,
    progress: Any = None,
) -> list[SweepRow]:
    """Coverage and context tokens per (length, strategy), every strategy at its defaults
    (``options``: an AuditOptions; the judge is never called here)."""
    from dataclasses import replace

    from workbench.audit.coverage_curve import tally
    from workbench.audit.pipeline import AuditOptions
    from workbench.audit.policy import AuditIndex
    from workbench.audit.strategies import get_strategy

    opts = replace(options or AuditOptions(), judge_mode=JudgeMode.NONE)
    gold_cases = [c for c in cases if c.gold_rules]
    rows = []
    for level in levels:
        index = AuditIndex(level.index)
        for name in strategies:
            if progress:
                progress(level.length, name)
            strat = get_strategy(name)
            coverage, mean_tokens, errors = tally(gold_cases, index, strat,
                                                  [opts] * len(gold_cases))
            rows.append(SweepRow(level.length, level.actual_tokens, name, len(gold_cases),
                                 coverage, mean_tokens, errors))
    return rows


def format_sweep(rows: list[SweepRow]) -> str:
    """Coverage @ mean context tokens per strategy (rows) and length (columns)."""
    lengths = sorted({r.length for r in rows})
    names = list(dict.fromkeys(r.strategy for r in rows))
    by = {(r.strategy, r.length): r for r in rows}
    sizes = {r.length: r.skill_tokens for r in rows}
    table = [["strategy", *(f"{n} ({sizes[n]:.0f})" for n in lengths)]]
    for name in names:
        table.append([name, *(f"{by[name, n].coverage:.3f} @ {by[name, n].mean_tokens:.0f}"
                              for n in lengths)])
    out = aligned_lines(table)
    out.append("(gold coverage @ mean context tokens; columns: target length (mean SKILL tokens))")
    return "\n".join(out)
