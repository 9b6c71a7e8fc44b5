"""The annotation dataset report (the first paper's Table 10) and its exports. Pure.

For each SKILL of a dataset (an extracted ``SkillGraph``) and pooled over them:

- ``n_extracted``: rules in the extracted inventory;
- ``n_reference``: current ``reference_rule`` labels (human) of the SKILL's source;
- ``matched``, ``precision``, ``recall``, ``f1``: one-to-one matching of the two inventories
  by meaning (``match_inventories`` with a pluggable similarity), optionally with each pair
  confirmed by a second opinion (``confirm``, e.g. the ``judge`` role);
- ``correct``, ``incorrect``, ``unresolved``, ``rule_correctness``: rule correctness after
  adjudication (``rule_correctness_rate`` over the SKILL's rules).

Pooled: counts are summed over all SKILLs; precision, recall and F1 pool the SKILLs that
have a reference inventory (a SKILL nobody has written references for yet says nothing about
extraction quality), ``rule_correctness`` = pooled correct / (correct + incorrect). The
pooled ``matched`` follows ``pooling`` (see ``matching.POOLING_MODES``): by default the
first paper's B.4, one matching of the pooled inventories; ``per_skill`` sums the SKILLs' matches.

The report also carries inter-annotator agreement per task type and judge-vs-human
agreement (model labels against the resolved human label of reviewed items).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

from workbench.annotation.agreement import agreement_report, cohen_kappa, percent_agreement
from workbench.annotation.items import reference_item, rule_items
from workbench.annotation.labels import (
    CDG_INSPECTION,
    REFERENCE_RULE,
    RULE_CORRECTNESS,
    Adjudication,
    Label,
    LabelError,
    ReferenceRule,
    retracted_rule,
)
from workbench.annotation.matching import (
    DEFAULT_POOLING,
    POOLING_MODES,
    Similarity,
    f1_of,
    jaccard_similarity,
    match_inventories,
    match_pooled,
)
from workbench.annotation.resolution import current_labels, progress, resolve, rule_correctness_rate
from workbench.export.sheets import csv_text
from workbench.graph import Rule, SkillGraph

# A second opinion on a matched pair: (extracted rule text, reference rule text) -> same rule?
Confirm = Callable[[str, str], bool]

TABLE_COLUMNS = (
    "skill", "n_extracted", "n_reference", "matched", "precision", "recall", "f1",
    "correct", "incorrect", "unresolved", "rule_correctness", "reference_annotators",
)
_HUMAN = object()  # the resolved human label as a rater; cannot clash with a model's name
LABEL_COLUMNS = (
    "kind", "task", "item", "annotator", "label", "error_type", "note", "source", "created_at",
)


SIMILARITIES = ("embedding", "jaccard", "tfidf")


def similarity_by_name(name: str) -> Similarity:
    """The similarity called ``name`` (one of :data:`SIMILARITIES`); the embedding model is
    imported only when asked for. Raises ``ValueError`` for other names."""
    if name == "embedding":
        from workbench.llm.embeddings import embedding_similarity

        return embedding_similarity
    from workbench.annotation.matching import tfidf_cosine_similarity

    table = {"jaccard": jaccard_similarity, "tfidf": tfidf_cosine_similarity}
    if name not in table:
        raise ValueError(f"unknown similarity {name!r}; use one of {', '.join(SIMILARITIES)}")
    return table[name]


def default_threshold(name: str) -> float:
    """The matching threshold that suits a similarity: 0.6 for embeddings, 0.5 lexical."""
    if name == "embedding":
        from workbench.llm.embeddings import DEFAULT_THRESHOLD

        return DEFAULT_THRESHOLD
    return 0.5


def rule_statement(rule: Rule | ReferenceRule) -> str:
    """One line a person or a judge reads: ``"When C: <modality> A"``."""
    return f"When {rule.condition}: {rule.modality} {rule.action}"


@dataclass(frozen=True)
class ReferenceEntry:
    annotator: str
    rule: ReferenceRule
    note: str = ""


@dataclass(frozen=True)
class PairRow:
    """A matched pair for review; ``confirmed`` is None when no second opinion was asked."""

    skill: str
    extracted_rule: str
    extracted: str
    reference_annotator: str
    reference: str
    similarity: float
    confirmed: bool | None = None


@dataclass(frozen=True)
class SkillRow:
    skill: str
    n_extracted: int
    n_reference: int
    matched: int
    precision: float | None
    recall: float | None
    f1: float | None
    correct: int
    incorrect: int
    unresolved: int
    rule_correctness: float | None
    reference_annotators: tuple[str, ...] = ()

    def as_row(self) -> dict:
        row = asdict(self)
        row["reference_annotators"] = ";".join(self.reference_annotators)
        return row


@dataclass(frozen=True)
class DatasetReport:
    rows: tuple[SkillRow, ...]
    pooled: SkillRow
    pairs: tuple[PairRow, ...]
    agreement: dict[str, dict]
    judge_human: dict[str, dict]
    settings: dict = field(default_factory=dict)

    def table(self) -> list[dict]:
        """The Table 10 rows: one per SKILL, then ``pooled``; flat values for CSV."""
        return [row.as_row() for row in (*self.rows, self.pooled)]

    def as_dict(self) -> dict:
        return {
            "settings": self.settings,
            "table": self.table(),
            "pairs": [asdict(p) for p in self.pairs],
            "agreement": self.agreement,
            "judge_human": self.judge_human,
        }


def reference_inventory(labels: Iterable[Label], skill: SkillGraph,
                        annotators: Sequence[str] | None = None) -> list[ReferenceEntry]:
    """The human reference rules written for ``skill``'s source, oldest first.

    ``annotators`` restricts them to those people (default: everyone's, pooled). Invalid
    stored values are skipped rather than failing the report.
    """
    return reference_entries(labels, reference_item(skill), annotators)


def reference_entries(labels: Iterable[Label], key: str,
                      annotators: Sequence[str] | None = None) -> list[ReferenceEntry]:
    """:func:`reference_inventory` by the item key: the reference rules in force (added and
    not retracted), oldest first."""
    wanted = set(annotators) if annotators is not None else None
    entries: list[ReferenceEntry] = []
    for lab in labels:
        if lab.task != REFERENCE_RULE or lab.item != key or lab.source != "human":
            continue
        if wanted is not None and lab.annotator not in wanted:
            continue
        try:
            withdrawn = retracted_rule(lab.value)
            if withdrawn is None:
                entries.append(ReferenceEntry(lab.annotator, ReferenceRule.from_value(lab.value), lab.note))
                continue
        except LabelError:
            continue
        # A retraction removes its author's latest copy of that rule (labels come oldest first).
        for i in range(len(entries) - 1, -1, -1):
            if entries[i].annotator == lab.annotator and entries[i].rule == withdrawn:
                del entries[i]
                break
    return entries


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _scores(matched: int, n_extracted: int, n_reference: int) -> dict:
    """``matched``, ``precision``, ``recall`` and ``f1`` of a row; no precision without
    references (rules nobody wrote references for say nothing about extraction quality)."""
    precision = _ratio(matched, n_extracted) if n_reference else None
    recall = _ratio(matched, n_reference)
    return {"matched": matched, "precision": precision, "recall": recall, "f1": f1_of(precision, recall)}


def _skill_row(skill: SkillGraph, labels: list[Label], adjudications: list[Adjudication], *,
               similarity: Similarity, threshold: float, annotators: Sequence[str] | None,
               min_annotators: int, confirm: Confirm | None,
               ) -> tuple[SkillRow, list[PairRow], list, list[ReferenceEntry]]:
    rules = list(skill.graph.rules.values())
    references = reference_inventory(labels, skill, annotators)
    agreement = match_inventories(rules, [e.rule for e in references], similarity=similarity,
                                  threshold=threshold)
    pairs: list[PairRow] = []
    matched = 0
    for pair in agreement.pairs:
        rule, entry = rules[pair.extracted], references[pair.reference]
        extracted_text, reference_text = rule_statement(rule), rule_statement(entry.rule)
        confirmed = confirm(extracted_text, reference_text) if confirm is not None else None
        matched += confirmed is not False
        pairs.append(PairRow(skill.name, rule.id, extracted_text, entry.annotator, reference_text,
                             round(pair.similarity, 6), confirmed))
    items = rule_items(skill)
    correctness = rule_correctness_rate(labels, adjudications, items=list(items),
                                        min_annotators=min_annotators)
    row = SkillRow(
        skill=skill.name,
        n_extracted=len(rules),
        n_reference=len(references),
        **_scores(matched, len(rules), len(references)),
        correct=correctness.correct,
        incorrect=correctness.incorrect,
        unresolved=correctness.unresolved,
        rule_correctness=correctness.rate,
        reference_annotators=tuple(sorted({e.annotator for e in references})),
    )
    return row, pairs, rules, references


def _pooled_inventory_match(row: SkillRow, inventories: Sequence[tuple[list, list[ReferenceEntry]]], *,
                            similarity: Similarity, threshold: float,
                            confirm: Confirm | None) -> SkillRow:
    """``row`` (the summed pooled row) with matched/P/R/F1 from one matching of the pooled
    inventories of the SKILLs that have references (the first paper's B.4)."""
    compared = [(rules, refs) for rules, refs in inventories if refs]
    if not compared:
        return row
    extracted = [r for rules, _ in compared for r in rules]
    references = [e for _, refs in compared for e in refs]
    agreement = match_pooled([(rules, [e.rule for e in refs]) for rules, refs in compared],
                             pooling="inventories", similarity=similarity, threshold=threshold)
    matched = sum(confirm is None or confirm(rule_statement(extracted[pair.extracted]),
                                             rule_statement(references[pair.reference].rule)) is not False
                  for pair in agreement.pairs)
    return replace(row, **_scores(matched, len(extracted), len(references)))


def _pooled(rows: Sequence[SkillRow]) -> SkillRow:
    compared = [r for r in rows if r.n_reference]
    correct, incorrect = sum(r.correct for r in rows), sum(r.incorrect for r in rows)
    return SkillRow(
        skill="pooled",
        n_extracted=sum(r.n_extracted for r in rows),
        n_reference=sum(r.n_reference for r in rows),
        **_scores(sum(r.matched for r in compared), sum(r.n_extracted for r in compared),
                  sum(r.n_reference for r in compared)),
        correct=correct,
        incorrect=incorrect,
        unresolved=sum(r.unresolved for r in rows),
        rule_correctness=_ratio(correct, correct + incorrect),
        reference_annotators=tuple(sorted({a for r in rows for a in r.reference_annotators})),
    )


def task_agreement(labels: Iterable[Label]) -> dict[str, dict]:
    """Inter-annotator agreement of the humans' current labels, per task type.

    ``rule_correctness`` compares correct/incorrect; ``rule_correctness_error_type`` compares
    the finer label (``correct`` or the error type); ``cdg_inspection`` compares pass/fail
    per criterion item. Reference rules form inventories: their agreement is the matching.
    """
    current = [lab for lab in current_labels(labels) if lab.source == "human"]
    by_task = {
        RULE_CORRECTNESS: [(lab.item, lab.annotator, lab.value)
                           for lab in current if lab.task == RULE_CORRECTNESS],
        f"{RULE_CORRECTNESS}_error_type": [
            (lab.item, lab.annotator, lab.error_type or lab.value)
            for lab in current if lab.task == RULE_CORRECTNESS
        ],
        CDG_INSPECTION: [(lab.item, lab.annotator, lab.value)
                         for lab in current if lab.task == CDG_INSPECTION],
    }
    return {task: agreement_report(rows) for task, rows in by_task.items()}


def judge_human_agreement(labels: Iterable[Label], adjudications: Iterable[Adjudication], task: str,
                          *, min_annotators: int = 2) -> dict[str, dict]:
    """Per model (``source == "model"``) annotator: agreement with the resolved human label on
    the items people have reviewed (adjudicated, or unanimous with ``min_annotators``).

    Returns ``{model: {"n_items", "agree", "percent_agreement", "cohen_kappa"}}``; kappa
    treats "human" and the model as the two raters.
    """
    labels = [lab for lab in labels if lab.task == task]
    adjudications = [adj for adj in adjudications if adj.task == task]
    resolved = {
        item: res.value
        for item, res in resolve(labels, adjudications, min_annotators=min_annotators).items()
        if res.value is not None
    }
    models: dict[str, dict[str, str]] = {}
    for lab in current_labels(lab for lab in labels if lab.source == "model"):
        models.setdefault(lab.annotator, {})[lab.item] = lab.value
    result = {}
    for model, values in sorted(models.items()):
        rows = []
        for item, value in values.items():
            if item in resolved:
                rows += [(item, _HUMAN, resolved[item]), (item, model, value)]
        n_items = len(rows) // 2
        result[model] = {
            "n_items": n_items,
            "agree": sum(rows[i][2] == rows[i + 1][2] for i in range(0, len(rows), 2)),
            "percent_agreement": percent_agreement(rows) if rows else None,
            "cohen_kappa": cohen_kappa(rows) if rows else None,
        }
    return result


def annotator_progress(labels: Iterable[Label], queue: Sequence[str], roster: Sequence[str],
                       reference_key: str) -> list[dict]:
    """One row per annotator in ``roster``: rules of the rule-correctness ``queue`` labelled,
    reference rules written for ``reference_key`` and audit cases inspected (any criterion).
    """
    labels = list(labels)
    done = progress(labels, queue, RULE_CORRECTNESS, annotators=roster)
    rows = []
    for name, p in done.items():
        mine = [lab for lab in labels if lab.annotator == name and lab.source == "human"]
        rows.append({
            "annotator": name,
            "rules labelled": p.done,
            "rules in queue": p.total,
            "done %": round(100 * p.fraction, 1),
            "reference rules": len(reference_entries(mine, reference_key, [name])),
            "cases inspected": len({lab.item.rpartition("#")[0] for lab in mine
                                    if lab.task == CDG_INSPECTION}),
        })
    return rows


def queue_status(labels: Iterable[Label], adjudications: Iterable[Adjudication], task: str,
                 queue: Sequence[str], *, min_annotators: int = 2) -> dict[str, int]:
    """How many items of ``queue`` are ``unanimous``, ``adjudicated`` or ``unresolved``
    (an item nobody labelled is unresolved)."""
    wanted = set(queue)
    resolved = resolve([lab for lab in labels if lab.task == task and lab.item in wanted],
                       [a for a in adjudications if a.task == task and a.item in wanted],
                       min_annotators=min_annotators)
    counts = {"unanimous": 0, "adjudicated": 0, "unresolved": 0}
    for item in wanted:
        res = resolved.get(item)
        counts[res.status if res else "unresolved"] += 1
    return counts


def dataset_report(skills: Iterable[SkillGraph], labels: Iterable[Label],
                   adjudications: Iterable[Adjudication] = (), *,
                   similarity: Similarity = jaccard_similarity, similarity_name: str = "jaccard",
                   threshold: float = 0.5, reference_annotators: Sequence[str] | None = None,
                   min_annotators: int = 2, confirm: Confirm | None = None,
                   pooling: str = DEFAULT_POOLING) -> DatasetReport:
    """The report for a dataset of extracted SKILLs and the labels given on them.

    ``pooling`` (one of ``matching.POOLING_MODES``) decides the pooled row's matching: the
    first paper's pooled inventories (default) or the per-SKILL matches summed.

    ``labels``/``adjudications`` may hold every task's records; each part takes its own.
    ``confirm`` is asked about each matched pair; a pair it rejects stays in ``pairs`` for
    review (``confirmed=False``) but does not count as matched. Raises ``ValueError`` for a
    threshold outside (0, 1] or a similarity of the wrong shape (see ``match_inventories``).
    """
    if pooling not in POOLING_MODES:
        raise ValueError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLING_MODES)}")
    labels = list(labels)
    adjudications = list(adjudications)
    if confirm is not None:
        confirm = functools.cache(confirm)  # a pair matched per SKILL and pooled is asked once
    rows: list[SkillRow] = []
    pairs: list[PairRow] = []
    inventories: list[tuple[list, list[ReferenceEntry]]] = []
    for skill in skills:
        row, skill_pairs, rules, references = _skill_row(
            skill, labels, adjudications, similarity=similarity, threshold=threshold,
            annotators=reference_annotators, min_annotators=min_annotators, confirm=confirm,
        )
        rows.append(row)
        pairs += skill_pairs
        inventories.append((rules, references))
    pooled = _pooled(rows)
    if pooling == "inventories":
        pooled = _pooled_inventory_match(pooled, inventories, similarity=similarity,
                                         threshold=threshold, confirm=confirm)
    judge_human = {
        task: judge_human_agreement(labels, adjudications, task, min_annotators=min_annotators)
        for task in (RULE_CORRECTNESS, CDG_INSPECTION)
    }
    settings = {
        "similarity": similarity_name,
        "threshold": threshold,
        "min_annotators": min_annotators,
        "reference_annotators": list(reference_annotators) if reference_annotators else None,
        "confirmed_by": "judge" if confirm is not None else None,
        "pooling": pooling,
    }
    return DatasetReport(tuple(rows), pooled, tuple(pairs), task_agreement(labels),
                         judge_human, settings)


# -- exports ---------------------------------------------------------------------------

def to_jsonl(rows: Iterable[dict]) -> str:
    """One JSON object per line (UTF-8 text, no ASCII escaping)."""
    return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)


def to_csv(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """CSV text with a header; ``None`` becomes an empty cell; formula-like text is defused
    (the workbench's one CSV writer, ``workbench.export.sheets.csv_text``)."""
    return csv_text(rows, columns)


def label_rows(labels: Iterable[Label], adjudications: Iterable[Adjudication] = (), *,
               current_only: bool = False) -> list[dict]:
    """Flat rows of labels (and adjudications) for export, columns :data:`LABEL_COLUMNS`.

    ``label`` holds the value, so a ``current_only`` export of one task is a valid input of
    ``workbench annotate agreement``. Rows are in record order, adjudications last.
    """
    labels = list(labels)
    if current_only:  # keep record order
        keep = {id(lab) for lab in current_labels(labels)}
        labels = [lab for lab in labels if id(lab) in keep]
    rows = [
        {"kind": "label", "task": lab.task, "item": lab.item, "annotator": lab.annotator,
         "label": lab.value, "error_type": lab.error_type, "note": lab.note, "source": lab.source,
         "created_at": lab.created_at.isoformat()}
        for lab in labels
    ]
    rows += [
        {"kind": "adjudication", "task": adj.task, "item": adj.item, "annotator": adj.reviewer,
         "label": adj.value, "error_type": adj.error_type, "note": adj.note, "source": "human",
         "created_at": adj.created_at.isoformat()}
        for adj in adjudications
    ]
    return rows
