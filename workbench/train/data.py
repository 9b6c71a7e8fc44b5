"""Training records from audit cases: the exact prompts the audit sends, with their targets.

For each case we materialise, through the audit pipeline itself (no second copy of any
template):

- the **judge prompt** of a strategy: the chat messages ``judge_v3`` renders for the
  context that strategy builds (for ``cdg``: the transitive ``require`` closure of the
  seeds found by the lexical keywords), conversation, state and reply;
- the **keyword prompt** (``keywords_v2``) that the keyworder answers, which GRPO trains;
- the label, the gold governing rules (``gold.governing_rule(s)``), the pseudonymised
  session and the complexity ``C = I_d * I_c`` of the case's SKILLs.

A case whose context cannot be built (no route, empty seed, over budget) keeps its keyword
prompt and records the reason in ``error`` with ``prompt = None``: the keyworder can still
learn from it, the judge cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from workbench.audit.cases import AuditCase, pseudonymise
from workbench.audit.judge import judge_messages
from workbench.audit.keywords import DEFAULT_MAX_LLM_KEYWORDS, keyword_messages
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.errors import WorkbenchError
from workbench.graph.stats import complexity as graph_complexity
from workbench.vocabulary import JudgeMode, KeywordMethod, StrategyName, label_violation

Messages = list[dict[str, str]]


class TrainingDataError(WorkbenchError, ValueError):
    """The records cannot be made or read; the message says what to fix."""


@dataclass
class TrainingRecord:
    """One case as training data. ``prompt`` (judge messages) and ``keyword_prompt`` are
    chat messages, the conversational format TRL and ``apply_chat_template`` take."""

    id: str
    session: str
    label: str | None
    gold_rules: list[str]
    complexity: float
    skills: list[str]
    strategy: str
    keyword_prompt: Messages
    prompt: Messages | None
    completion: str | None
    closure: dict[str, list[str]] = field(default_factory=dict)
    context_tokens: int = 0
    error: str = ""
    # From reviewed audits (``materialise_reviewed``): the record's weight for trainers that
    # take one (reviewed: 1), and how the analysts' review gave its label; else 1 and {}.
    weight: float = 1.0
    review: dict[str, Any] = field(default_factory=dict)

    @property
    def instance(self) -> str:
        return self.id

    @property
    def violation(self) -> bool | None:
        return label_violation(self.label)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        # ``instance`` is the key of the scaling outcomes table; ``violation`` a target field
        # of the distillation sets: both are derived, written so the records serve both.
        out["instance"] = self.instance
        out["violation"] = self.violation
        return out


def _violated_rules(case: AuditCase) -> list[str]:
    gold = case.extra.get("gold")
    if not isinstance(gold, dict):
        return []
    one = gold.get("violated_rule")
    many = gold.get("violated_rules")
    if isinstance(many, list):
        return [str(r) for r in many if isinstance(r, str) and r]
    return [one] if isinstance(one, str) and one else []


def target_verdict(case: AuditCase) -> str | None:
    """The verdict JSON a perfect judge would give (the prompt-completion target), or None
    when the case is unlabelled. Violations cite the gold violated rules when known."""
    if case.label is None:
        return None
    violation = bool(label_violation(case.label))
    rules = _violated_rules(case) if violation else []
    reason = (
        "The reply breaks " + ", ".join(f"[{r}]" for r in rules) + "."
        if rules
        else ("The reply violates the policy." if violation else "No rule is violated.")
    )
    # The judge's answer schema (judge_v3): no gold words of the reply are known, so the
    # target quotes none.
    return json.dumps(
        {"violation": violation, "violated_rules": rules, "evidence": [], "reason": reason},
        ensure_ascii=False,
    )


def materialise(
    cases: Iterable[AuditCase],
    index: AuditIndex,
    strategy: str = StrategyName.CDG,
    *,
    options: AuditOptions | None = None,
    salt: str = "",
    max_keywords: int = DEFAULT_MAX_LLM_KEYWORDS,
) -> list[TrainingRecord]:
    """One :class:`TrainingRecord` per case, prompts rendered by the audit pipeline.

    The context is built with ``options`` (lexical keywords by default: no model call) and
    judged by nobody (``judge_mode='none'``): only the prompt the judge would see is kept.
    ``salt`` feeds :func:`pseudonymise`; the original session id is not stored.
    """
    opts = options or AuditOptions()
    if opts.keywords != KeywordMethod.LEXICAL:
        raise TrainingDataError(
            "materialising prompts uses lexical keywords (no model call); drop keywords='llm'"
        )
    opts = AuditOptions(keywords=KeywordMethod.LEXICAL, judge_mode=JudgeMode.NONE, context=opts.context,
                        max_keywords=opts.max_keywords, max_skills=opts.max_skills)
    records = []
    complexity_of: dict[tuple[str, ...], float] = {}
    for case in cases:
        trace = audit_case(case, index, strategy, None, opts)
        names = tuple(sorted(trace.skills or case.skills or []))
        known = tuple(n for n in names if n in index)
        if known not in complexity_of:
            complexity_of[known] = graph_complexity(index.skill(n) for n in known) if known else 0.0
        judged = trace.error is None
        records.append(
            TrainingRecord(
                id=case.id,
                session=pseudonymise(case.session or case.id, salt),
                label=case.label,
                gold_rules=case.gold_rules,
                complexity=float(complexity_of[known]),
                skills=list(names),
                strategy=trace.strategy,
                keyword_prompt=keyword_messages(case, max_keywords),
                prompt=judge_messages(case, trace.context) if judged else None,
                completion=target_verdict(case) if judged else None,
                closure={k: list(v) for k, v in (trace.closure or {}).items()},
                context_tokens=int(trace.context_tokens or 0),
                error="" if judged else f"{trace.error.kind}: {trace.error.message}",
            )
        )
    return records


def write_jsonl(records: Sequence[TrainingRecord], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    return p


RECORD_FIELDS = ("id", "session", "keyword_prompt", "prompt", "gold_rules", "label")


def read_jsonl(path: str | Path, require: Sequence[str] = RECORD_FIELDS) -> list[dict[str, Any]]:
    """Read records (of :func:`write_jsonl` or a ``scaling select`` set), each holding the
    ``require`` fields; errors name the line and field at fault."""
    from workbench.inputs import InputError, iter_jsonl, read_input_text

    p = Path(path)
    if not p.is_file():
        raise TrainingDataError(f"{p}: no such records file; make one with `workbench train data`")
    rows = []
    try:
        # The project's one JSONL reader: encodings, size, depth and duplicate keys are checked
        # there, with the line named.
        for n, row in iter_jsonl(read_input_text(p, "records file"), str(p)):
            if not isinstance(row, dict):
                raise TrainingDataError(f"{p} line {n}: a record must be a JSON object")
            missing = [k for k in require if k not in row]
            if missing:
                raise TrainingDataError(
                    f"{p} line {n}: missing {', '.join(missing)}; regenerate it with "
                    "`workbench train data`"
                )
            rows.append(row)
    except InputError as exc:
        raise TrainingDataError(str(exc)) from None
    if not rows:
        raise TrainingDataError(f"{p}: holds no records")
    return rows


def to_hf_dataset(records: Sequence[TrainingRecord | dict[str, Any]]):
    """A ``datasets.Dataset`` of the records (same columns as the JSONL)."""
    try:
        from datasets import Dataset
    except ImportError as exc:  # pragma: no cover - datasets is a pinned dependency
        raise TrainingDataError(
            "the Hugging Face export needs `datasets`; install with pip install datasets==5.2.0"
        ) from exc
    rows = [r.to_dict() if isinstance(r, TrainingRecord) else dict(r) for r in records]
    # Arrow needs one type per column: the closure map varies in keys, so store it as JSON.
    for r in rows:
        r["closure"] = json.dumps(r.get("closure") or {}, ensure_ascii=False, sort_keys=True)
    return Dataset.from_list(rows)


def _reviewed_case(case: AuditCase, label: str, drop_rules: Sequence[str]) -> AuditCase:
    """``case`` with the reviewed ``label`` as its target, and the violated rules its target
    verdict cites kept only where they fit: the gold violated rules when gold and review
    both say violation, less the rules an analyst marked as wrongly cited."""
    gold = dict(case.extra.get("gold")) if isinstance(case.extra.get("gold"), dict) else {}
    rules = _violated_rules(case) if label_violation(case.label) and label_violation(label) else []
    gold.pop("violated_rule", None)
    gold["violated_rules"] = [r for r in rules if r not in set(drop_rules)]
    return replace(case, label=label, extra={**case.extra, "gold": gold})


def materialise_reviewed(
    cases: Iterable[AuditCase],
    index: AuditIndex,
    reviewed: Sequence[Any],
    strategy: str = StrategyName.CDG,
    *,
    options: AuditOptions | None = None,
    salt: str = "",
) -> tuple[list[TrainingRecord], int]:
    """Training records of reviewed verdicts (``workbench.train.reviewed.reviewed_labels``):
    one per reviewed label whose case is among ``cases``, prompts as :func:`materialise`
    makes them, the label (and the target verdict) the analysts stand behind, and
    ``weight``/``review`` filled. Returns ``(records, labels whose case is missing)``."""
    by_id = {c.id: c for c in cases}
    chosen, kept = [], []
    for r in reviewed:
        case = by_id.get(r.case_id)
        if case is None:
            continue
        chosen.append(_reviewed_case(case, r.label, r.cited_rules if r.wrong_rule else ()))
        kept.append(r)
    records = materialise(chosen, index, strategy, options=options, salt=salt)
    for record, r in zip(records, kept, strict=True):
        record.weight, record.review = float(r.weight), r.as_dict()
    return records, len(reviewed) - len(kept)
