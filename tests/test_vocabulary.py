"""The one vocabulary (workbench.vocabulary): its strings are the ones on disk, the CLI and the
modules that check options read their choices from it, and one reading of gold labels and gold
rules serves every caller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.vocabulary import (
    COMPLIANT,
    JUDGED_MODES,
    VIOLATION,
    EmptySeedPolicy,
    ErrorKind,
    JudgeMode,
    KeywordMethod,
    Label,
    Render,
    Seeding,
    Split,
    StrategyName,
    label_violation,
    values,
    verdict_word,
)

ROOT = Path(__file__).resolve().parents[1]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_enum_values_are_the_strings_on_disk() -> None:
    traces = _jsonl(ROOT / "fixtures/demo/traces_cdg.jsonl")
    cases = _jsonl(ROOT / "fixtures/demo/cases.jsonl") + _jsonl(ROOT / "fixtures/audit/merchant_cases.jsonl")
    assert {t["strategy"] for t in traces} <= set(values(StrategyName))
    assert {t["judge_mode"] for t in traces} <= set(values(JudgeMode))
    assert {t["keywords_method"] for t in traces} <= set(values(KeywordMethod))
    assert {c["label"] for c in cases} == set(values(Label)) == {"positive", "negative"}
    # A member is its string: comparisons with stored values and JSON need no conversion.
    assert JudgeMode.PER_RULE == "per-rule" and json.dumps([Split.GROUPED]) == '["grouped"]'
    assert values(JudgeMode) == ("whole", "per-rule", "checklist", "none")
    assert values(EmptySeedPolicy) == ("error", "all-rules", "per-skill")
    assert (values(Seeding), values(Render)) == (("scored", "keywords"), ("compact", "full"))


def test_error_kinds_are_the_strings_traces_and_reports_write() -> None:
    """Stored traces, JUnit reports and outcome tables hold these words: renaming a member's
    value would orphan every trace written before."""
    assert values(ErrorKind) == (
        "EmptySeed", "BudgetExceeded", "NoRoute", "UnknownSkill", "WindowExceeded",
        "ModelCallError", "TimeLimit", "InternalError", "NotJudged")
    stored = _jsonl(ROOT / "fixtures/scaling/complibench_airlines/verdicts.jsonl")
    kinds = {t["error"]["kind"] for t in stored if t.get("error")}
    assert kinds and kinds <= set(values(ErrorKind))

    from workbench.audit.deadline import CaseTimeLimit
    from workbench.audit.trace import RETRYABLE_KINDS, AuditError, AuditTrace, is_retryable
    from workbench.audit.window import WindowExceeded
    from workbench.graph.closure import BudgetExceeded, EmptySeed

    assert (EmptySeed([]).kind, BudgetExceeded({}, 0, 0).kind) == ("EmptySeed", "BudgetExceeded")
    assert (CaseTimeLimit.kind, WindowExceeded.kind) == ("TimeLimit", "WindowExceeded")
    assert RETRYABLE_KINDS == {"ModelCallError", "InternalError"}
    # A trace error keeps plain text, as one read back from a file: counts by kind print as before.
    error = AuditError(ErrorKind.MODEL_CALL_ERROR, "timeout")
    assert type(error.kind) is str and repr({error.kind: 1}) == "{'ModelCallError': 1}"
    assert json.dumps({"kind": error.kind}) == '{"kind": "ModelCallError"}'
    assert is_retryable(AuditTrace("c1", "cdg", error=AuditError("ModelCallError", "read back")))


def test_the_modules_read_their_choices_from_the_vocabulary() -> None:
    from workbench.audit import JUDGE_MODES
    from workbench.audit.cases import LABELS
    from workbench.audit.keywords import KEYWORD_METHODS
    from workbench.audit.parts import SPLITS
    from workbench.audit.rule_strategies import EMPTY_SEED_POLICIES, SEEDING_METHODS
    from workbench.audit.strategies import STRATEGIES
    from workbench.graph.render import RENDER_STYLES

    assert JUDGE_MODES == values(JudgeMode) and set(JUDGED_MODES) == set(JUDGE_MODES) - {"none"}
    assert tuple(STRATEGIES) == values(StrategyName)
    assert all(STRATEGIES[name].name == name for name in STRATEGIES)
    assert (KEYWORD_METHODS, SPLITS, LABELS) == (values(KeywordMethod), values(Split), values(Label))
    assert (EMPTY_SEED_POLICIES, SEEDING_METHODS) == (values(EmptySeedPolicy), values(Seeding))
    assert RENDER_STYLES == values(Render)


def test_argparse_rejects_an_unknown_judge_mode_naming_the_vocabulary(capsys) -> None:
    from workbench.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["audit", "--index", "i.json", "--cases", "c.jsonl", "--strategy", "cdg",
                           "--judge-mode", "sometimes"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'sometimes'" in err and "'whole', 'per-rule'" in err
    args = parser.parse_args(["audit", "--index", "i.json", "--cases", "c.jsonl",
                              "--strategy", "no-closure", "--judge-mode", "per-rule"])
    assert (args.judge_mode, args.keywords, args.empty_seed) == ("per-rule", "lexical", "error")
    with pytest.raises(SystemExit):
        parser.parse_args(["audit", "--index", "i", "--cases", "c", "--strategy", "colbert"])


def test_one_reading_of_gold_labels() -> None:
    assert (label_violation("negative"), label_violation("positive")) == (True, False)
    for other in (None, "", "NEGATIVE", "violation", 1, True):
        assert label_violation(other) is None, other
    assert Label.NEGATIVE.is_violation and not Label.POSITIVE.is_violation
    assert (Label.NEGATIVE.word, Label.POSITIVE.word) == (VIOLATION, COMPLIANT)
    assert (verdict_word(True), verdict_word(False)) == ("violation", "compliant")

    from workbench.words import gold_word

    assert (gold_word("negative"), gold_word("positive")) == ("violation", "compliant")


def test_gold_rules_take_the_list_over_the_single_id() -> None:
    """A hand-written case with both sources: the full governing list wins; the importer's
    single id is the fallback (workbench.audit.cases.gold_rules_of documents why)."""
    from workbench.audit.cases import AuditCase
    from workbench.review.queue import gold_of

    both = AuditCase("c1", "reply", label="negative", extra={"gold": {
        "governing_rule": "MOR-C005",
        "governing_rules": ["MOR-C005", "MOR-S001", "MOR-S001", 7, ""],
    }})
    single = AuditCase("c2", "reply", extra={"gold": {"governing_rule": "R9",
                                                     "governing_rules": None}})
    empty_list = AuditCase("c3", "reply", extra={"gold": {"governing_rule": "R4",
                                                         "governing_rules": []}})
    none = AuditCase("c4", "reply", extra={"gold": "not a dict"})
    assert both.gold_rules == ["MOR-C005", "MOR-S001"]
    assert (single.gold_rules, empty_list.gold_rules, none.gold_rules) == (["R9"], ["R4"], [])
    _labels, rules = gold_of([both, single, empty_list, none])
    assert rules == {"c1": ["MOR-C005", "MOR-S001"], "c2": ["R9"], "c3": ["R4"]}


def test_metrics_gold_comes_from_the_case(tmp_path, capsys) -> None:
    """`workbench metrics --cases` takes gold rules from AuditCase.gold_rules: before, it read
    the single id first, so a case with both counted as covered by its first rule alone."""
    from workbench.cli import main

    trace = {"id": "c1", "strategy": "cdg", "label": "negative", "judge_mode": "none",
             "keywords_method": "lexical", "closure": {"s": ["A"]}, "units": ["A"],
             "context": "", "context_tokens": 10}
    (tmp_path / "t.jsonl").write_text(json.dumps(trace) + "\n", encoding="utf-8")
    case = {"id": "c1", "label": "negative", "model_response": "x",
            "gold": {"governing_rule": "A", "governing_rules": ["A", "B"]}}
    (tmp_path / "c.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    assert main(["metrics", str(tmp_path / "t.jsonl"), "--cases", str(tmp_path / "c.jsonl"),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["coverage"] == 0.0  # B is governing and missing from the context


def test_every_error_kind_has_words_and_an_unknown_one_reads_as_an_error():
    from workbench.vocabulary import ErrorKind, error_words

    for kind in ErrorKind:
        words = error_words(kind.value)
        assert words and words == kind.words and kind.value not in words
    assert error_words("NoRoute") == "no SKILL matched the case"
    assert error_words("SomethingNew") == "an error"
