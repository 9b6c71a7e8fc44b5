"""Length sweep (second paper, RQ3): the same cases against ever longer SKILLs.

Conversations and gold stay fixed; each case's SKILL is rebuilt at a controlled length by
adding clauses that do not apply to it: first the workflows of the domain's other intents
(as ``import-complibench --long`` does), then, once those run out, sections of other
domains' policies (``foreign`` Markdown files, e.g. tau-bench retail or telecom policies),
each paragraph or bullet one rule; foreign clauses also fill what whole workflows leave
short of the target. The clauses are inserted before the SKILL's condition-triggered
section, so the case's own workflow and guidelines keep their rule ids and the gold stays
valid. A SKILL whose own part is already longer than a length is kept at its own size
(reported in ``LengthLevel.actual_tokens``). A SKILL that cannot reach a length within
``TOLERANCE`` because the foreign text ran out stops the sweep with
:class:`LengthSweepError`, naming how many tokens of foreign text are missing, instead of
measuring the same size under several lengths.

The sweep measures gold coverage at every length (no judge); with ``judge_sample`` it also
judges a sample of the cases at every length and strategy and reports ACC and
violation-F1 (the second paper's RQ3 figure).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.audit.cases import AuditCase
from workbench.audit.importers.complibench import (
    Conversation,
    Workflow,
    build_skill,
    conversation_cases,
    read_conversation,
    skill_name,
)
from workbench.audit.metrics import aligned_lines, compute_metrics
from workbench.errors import WorkbenchError
from workbench.evaluate.coverage_curve import CURVE_STRATEGIES
from workbench.graph import PolicyIndex
from workbench.inputs import read_input_text
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import JudgeMode

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

DEFAULT_LENGTHS = (4000, 8000, 12000, 20000, 28000, 36000)
TOLERANCE = 0.10  # a SKILL below (1 - TOLERANCE) x its target length is "short"
_COND_SECTION = "\n## Condition-triggered guidelines"


class LengthSweepError(WorkbenchError, ValueError):
    """A target length cannot be reached: the message names the shortfall and the fix."""


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
    """Paragraphs and bullets of other policies, with the heading they sit under; a clause
    whose text was seen before is left out (tau-bench and tau2-bench share whole policies,
    and a repeated clause would pad the SKILL without adding anything new)."""
    out: list[Clause] = []
    seen: set[str] = set()
    for title, text in _documents(paths):
        heading = title
        for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", text):
            text = " ".join(block.split())
            m = re.match(r"^#+\s+(.*)$", text)
            if m:
                heading = f"{title}: {m.group(1)}"
                continue
            text = re.sub(r"^[-*]\s+", "", text)
            if len(text) >= 40 and text not in seen:
                seen.add(text)
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
    min_tokens: int = 0  # the smallest and largest SKILL at this level
    max_tokens: int = 0


def _foreign_total(clauses: list[Clause]) -> int:
    return sum(count_tokens(c.text) + 1 for c in clauses)


def _shortfall(length: int, sizes: dict[str, int], own: dict[str, int]) -> tuple[str, int] | None:
    """The shortest SKILL (name, tokens) among those whose own part fits ``length`` but that
    stay more than TOLERANCE below it (only more foreign text can make up the difference)."""
    short = {n: t for n, t in sizes.items() if own[n] <= length and t < (1 - TOLERANCE) * length}
    return min(short.items(), key=lambda kv: kv[1]) if short else None


def _raise_short(short: dict[int, tuple[str, int]], clauses: list[Clause]) -> None:
    worst = max(n - reached for n, (_, reached) in short.items())
    each = "; ".join(f"{n:,} reaches {reached:,} ({name})" for n, (name, reached) in short.items())
    raise LengthSweepError(
        f"{len(short)} length(s) cannot be reached: the foreign text "
        f"({_foreign_total(clauses):,} tokens in {len(clauses)} clauses) runs out; shortest "
        f"SKILL per length: {each}; about {worst:,} tokens of foreign text are missing",
        f"add at least {worst:,} tokens of other domains' policies with --foreign (e.g. "
        "tau2-bench's domains/banking_knowledge/documents), or lower --lengths")


def sweep_levels(
    src: str | Path,
    lengths: tuple[int, ...] = DEFAULT_LENGTHS,
    foreign: list[Path] | None = None,
    domain_label: str = "Celestar Air",
) -> tuple[list[LengthLevel], list[AuditCase]]:
    """One policy index per length (same SKILL names and gold rule ids) and the cases.

    Raises FileNotFoundError (no conversations), CompliBenchFormatError, and
    LengthSweepError when a length cannot be reached with the foreign text given.
    """
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
    own = {name: count_tokens(build_skill(c, [], domain_label)["source"])
           for name, c in firsts.items()}
    levels = []
    short: dict[int, tuple[str, int]] = {}
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
            # Foreign clauses fill what whole workflows leave: a workflow is hundreds of
            # tokens, a clause a few dozen, so the SKILL lands close to its target.
            room = length - count_tokens(skill["source"])
            if room > 50 and clauses:
                extra, rules = _foreign_text(clauses, room, "other.")
                skill = _insert(skill, extra, rules)
            skills.append(skill)
        sizes = {s["name"]: count_tokens(s["source"]) for s in skills}
        if (gap := _shortfall(length, sizes, own)) is not None:
            short[length] = gap
            continue
        index = PolicyIndex.from_dict({"format": "skillcdg/1", "skills": skills},
                                      f"length sweep {length}")
        mean = sum(sizes.values()) / max(len(sizes), 1)
        levels.append(LengthLevel(length, index, mean, min(sizes.values(), default=0),
                                  max(sizes.values(), default=0)))
    if short:
        _raise_short(short, clauses)
    return levels, cases


@dataclass
class SweepRow:
    length: int
    skill_tokens: float  # mean real SKILL size at this length (tokens)
    strategy: str
    cases: int
    coverage: float
    mean_tokens: float
    errors: dict[str, int]
    skill_tokens_min: int = 0
    skill_tokens_max: int = 0
    # Judged sample (None when the sweep ran without a judge): ACC counts a case without a
    # verdict as wrong; F1 is violation-F1 over the judged cases (None when undefined).
    judged_cases: int | None = None
    acc: float | None = None
    f1: float | None = None
    judge_errors: dict[str, int] | None = None
    # 95 % Wilson interval of ACC over the sample, the model time its calls took (seconds;
    # calls answered from the response cache count 0) and each judged case: {"case",
    # "gold", "verdict"} (violation True/False; verdict None when the judge gave none).
    acc_low: float | None = None
    acc_high: float | None = None
    judge_seconds: float | None = None
    outcomes: list[dict[str, Any]] | None = None



def judge_sample(cases: list[AuditCase], n: int) -> list[AuditCase]:
    """``n`` labelled cases, the same at every length and strategy: violations and
    compliant replies alternately (as far as each lasts), each kind in a fixed shuffled
    order, so a small sample holds both classes and F1 is defined."""
    from workbench.vocabulary import label_violation

    kinds: dict[bool, list[AuditCase]] = {True: [], False: []}
    for c in sorted(cases, key=lambda c: c.id):
        actual = label_violation(c.label)
        if actual is not None:
            kinds[actual].append(c)
    for k, items in kinds.items():
        random.Random(f"sweep-sample:{k}").shuffle(items)
    out: list[AuditCase] = []
    while len(out) < n and (kinds[True] or kinds[False]):
        for k in (True, False):
            if kinds[k] and len(out) < n:
                out.append(kinds[k].pop(0))
    return out


def _judged(sample: list[AuditCase], index: Any, strat: Any, gateway: ModelGateway, opts: Any,
            concurrency: int) -> dict[str, Any]:
    """Audit ``sample`` with the judge: the judged fields of a :class:`SweepRow`."""
    import math
    from concurrent.futures import ThreadPoolExecutor

    from workbench.audit.runner import audit_one
    from workbench.scaling.figure import wilson_interval
    from workbench.vocabulary import label_violation

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        traces = list(pool.map(lambda c: audit_one(c, index, strat, gateway, opts), sample))
    m = compute_metrics(traces, {c.id: c.label for c in sample})[0]

    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    outcomes = []
    for case, trace in zip(sample, traces, strict=True):
        verdict = trace.violation if not trace.error else None
        outcomes.append({"case": case.id, "gold": label_violation(case.label), "verdict": verdict})
    right = sum(o["verdict"] is not None and o["verdict"] == o["gold"] for o in outcomes)
    low, high = (float(x) for x in wilson_interval(right, len(sample)))
    return {"judged_cases": m.judged, "acc": num(m.acc), "f1": num(m.f1), "judge_errors": m.errors,
            "acc_low": low, "acc_high": high, "outcomes": outcomes,
            "judge_seconds": round(sum(c.latency_ms for t in traces for c in t.usage
                                       if not c.cached) / 1000, 1)}


def run_sweep(
    levels: list[LengthLevel],
    cases: list[AuditCase],
    strategies: tuple[str, ...] = CURVE_STRATEGIES,
    options: Any = None,
    progress: Any = None,
    gateway: ModelGateway | None = None,
    judge_sample_size: int = 0,
    concurrency: int = 1,
) -> list[SweepRow]:
    """Coverage and context tokens per (length, strategy), every strategy at its defaults
    (``options``: an AuditOptions; coverage never calls the judge). With
    ``judge_sample_size`` N > 0 (and a ``gateway``), N labelled cases (:func:`judge_sample`)
    are also judged (``options.judge_mode``, whole by default) at each (length, strategy).
    """
    from dataclasses import replace

    from workbench.audit.pipeline import AuditOptions
    from workbench.audit.policy import AuditIndex
    from workbench.audit.strategies import get_strategy
    from workbench.evaluate.coverage_curve import tally

    base = options or AuditOptions()
    opts = replace(base, judge_mode=JudgeMode.NONE)
    if judge_sample_size > 0 and gateway is None:
        raise ValueError("a judged sweep needs a model gateway (the judge role)")
    judged_opts = replace(base, judge_mode=JudgeMode.WHOLE
                          if base.judge_mode == JudgeMode.NONE else base.judge_mode)
    sample = judge_sample(cases, judge_sample_size) if judge_sample_size > 0 else []
    gold_cases = [c for c in cases if c.gold_rules]
    strats = {name: get_strategy(name, gateway) for name in strategies}
    rows = []
    for level in levels:
        index = AuditIndex(level.index)
        for name, strat in strats.items():
            if progress:
                progress(level.length, name)
            coverage, mean_tokens, errors = tally(gold_cases, index, strat,
                                                  [opts] * len(gold_cases))
            row = SweepRow(level.length, level.actual_tokens, name, len(gold_cases),
                           coverage, mean_tokens, errors, level.min_tokens, level.max_tokens)
            if sample:
                if progress:
                    progress(level.length, name, f"judging {len(sample)} cases")
                for key, value in _judged(sample, index, strat, gateway, judged_opts,
                                          concurrency).items():
                    setattr(row, key, value)
            rows.append(row)
    return rows


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_sweep(rows: list[SweepRow]) -> str:
    """One line per (length, strategy): the target, the real SKILL size reached, gold
    coverage and context tokens, and ACC/F1 of the judged sample when there is one."""
    judged = any(r.judged_cases is not None for r in rows)
    head = ["length", "SKILL tokens (min-max)", "strategy", "cases", "coverage",
            "context tokens"]
    table = [head + (["judged", "ACC", "F1"] if judged else [])]
    for r in sorted(rows, key=lambda r: r.length):
        line = [f"{r.length:,}", f"{r.skill_tokens:,.0f} ({r.skill_tokens_min:,}-"
                f"{r.skill_tokens_max:,})", r.strategy, str(r.cases), f"{r.coverage:.3f}",
                f"{r.mean_tokens:.0f}"]
        if judged:
            line += [str(r.judged_cases or 0), _num(r.acc), _num(r.f1)]
        table.append(line)
    out = aligned_lines(table)
    out.append("(SKILL tokens: the real size reached, mean over the SKILLs; coverage: share "
               "of cases with all gold rules in context"
               + ("; ACC/F1: judged sample, a case without a verdict counts as wrong)"
                  if judged else ")"))
    return "\n".join(out)
