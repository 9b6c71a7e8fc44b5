"""The audit's words, once: judge modes, keyword methods, strategies, how a context is split,
seeded and rendered, the kinds of trace errors, the gold labels, and the model roles.

Each is a ``StrEnum``: a member *is* its string (``JudgeMode.PER_RULE == "per-rule"``), so
traces, cases and database rows written before keep reading the same, and JSON gets the
plain string. Argparse ``choices`` and page selectors take ``values(Enum)`` (plain strings,
so widget state stays plain).

Labels: the datasets say ``positive`` (the reply complies) and ``negative`` (it violates
the policy). ``label_violation`` is the one reading of that; ``verdict_word`` is the one
analyst's word for a verdict ("violation"/"compliant").

Example::

    from workbench.vocabulary import JudgeMode, label_violation, values

    parser.add_argument("--judge-mode", choices=values(JudgeMode))
    label_violation("negative")  # True
"""

from __future__ import annotations

from enum import StrEnum


def values(kind: type[StrEnum]) -> tuple[str, ...]:
    """The plain strings of an enum, in declaration order (for ``choices`` and selectors)."""
    return tuple(member.value for member in kind)


class JudgeMode(StrEnum):
    """How the judge is asked: one verdict over the whole context, one question per rule,
    a checklist (one call answering each rule's status, the verdict derived from it), or not
    at all (contexts only)."""

    WHOLE = "whole"
    PER_RULE = "per-rule"
    CHECKLIST = "checklist"
    NONE = "none"


# The modes that call the judge: the CLI's --judge-mode (its --no-judge gives NONE).
JUDGED_MODES: tuple[str, ...] = (
    JudgeMode.WHOLE.value, JudgeMode.PER_RULE.value, JudgeMode.CHECKLIST.value)


class ProbabilityMethod(StrEnum):
    """Where a verdict's violation probability comes from: the verdict token's
    log-probabilities, k sampled answers, the first of those the server allows (``auto``:
    log-probabilities when it returns them, else samples), or none."""

    AUTO = "auto"
    LOGPROBS = "logprobs"
    SAMPLED = "sampled"
    OFF = "off"


class CheckStatus(StrEnum):
    """A checklist judge's answer for one rule (words a small model writes naturally: the
    1.5B model's own likeliest first tokens there are "not", "f(ollowed)" and "viol")."""

    NOT_APPLICABLE = "not applicable"
    FOLLOWED = "followed"
    VIOLATED = "violated"


class ModelRole(StrEnum):
    """The model roles the product calls (``workbench.llm``: each has a ``[roles.<name>]``
    table in ``workbench.toml`` and ``WORKBENCH_<ROLE>_*`` variables). A configuration may
    define more roles; a role is named by its plain string wherever one is stored (usage
    rows, traces, recordings), which a member is."""

    EXTRACTOR = "extractor"  # atomic rules from one block of a SKILL (and the graph baselines' indexing)
    FUSER = "fuser"  # merges block graphs, adds cross-block require edges
    KEYWORDER = "keyworder"  # audit keywords for routing
    JUDGE = "judge"  # the compliance verdict
    MATCHER = "matcher"  # rule matching for annotation (rule-set agreement)


class KeywordMethod(StrEnum):
    """Where the audit keywords come from: deterministic words, or the keyworder model."""

    LEXICAL = "lexical"
    LLM = "llm"


class StrategyName(StrEnum):
    """The policy-access strategies (``workbench.audit.strategies.STRATEGIES`` maps each to
    its class)."""

    CDG = "cdg"
    RAW = "raw"
    BM25 = "bm25"
    DENSE = "dense"
    NO_CLOSURE = "no-closure"
    NO_KEYWORDS = "no-keywords"
    LIGHTRAG = "lightrag"
    GRAPHRAG = "graphrag"


class Split(StrEnum):
    """How a context over the judge's window is judged in parts."""

    GROUPED = "grouped"
    PER_RULE = "per-rule"


class EmptySeedPolicy(StrEnum):
    """What to do when no seed rule is found (see ``workbench.audit.rule_strategies``)."""

    ERROR = "error"
    ALL_RULES = "all-rules"
    PER_SKILL = "per-skill"


class Seeding(StrEnum):
    """How seed rules are chosen: ranked for the whole case, or the v1 keyword match."""

    SCORED = "scored"
    KEYWORDS = "keywords"


class Render(StrEnum):
    """How rules are written for the judge (see ``workbench.graph.render``)."""

    COMPACT = "compact"
    FULL = "full"


class ErrorKind(StrEnum):
    """Why a case has no verdict: the ``kind`` of a trace's error (``AuditError``), as traces,
    JUnit reports and outcome tables write it."""

    EMPTY_SEED = "EmptySeed"  # no rule matched the case: nothing to judge against
    BUDGET_EXCEEDED = "BudgetExceeded"  # the context renders over the token budget
    NO_ROUTE = "NoRoute"  # no SKILL matches the keywords
    UNKNOWN_SKILL = "UnknownSkill"  # the case names a SKILL not in the index
    WINDOW_EXCEEDED = "WindowExceeded"  # the case does not fit the judge's context window
    MODEL_CALL_ERROR = "ModelCallError"  # a model call failed (cause: the gateway's kind)
    TIME_LIMIT = "TimeLimit"  # the case used up its time limit of audit work
    INTERNAL_ERROR = "InternalError"  # an unexpected exception in the pipeline
    NOT_JUDGED = "NotJudged"  # reports only: a case with neither a verdict nor a trace error

    @property
    def words(self) -> str:
        """The analyst's words for it (screens; traces and reports keep the code)."""
        return _ERROR_WORDS[self]


_ERROR_WORDS = {
    ErrorKind.EMPTY_SEED: "no rule matched the case",
    ErrorKind.BUDGET_EXCEEDED: "the rules found exceed the context budget",
    ErrorKind.NO_ROUTE: "no SKILL matched the case",
    ErrorKind.UNKNOWN_SKILL: "the case names a SKILL that is not loaded",
    ErrorKind.WINDOW_EXCEEDED: "the case is too long for the judge",
    ErrorKind.MODEL_CALL_ERROR: "the model call failed",
    ErrorKind.TIME_LIMIT: "the case ran out of time",
    ErrorKind.INTERNAL_ERROR: "an unexpected error in the workbench",
    ErrorKind.NOT_JUDGED: "not judged",
}


def error_words(kind: object) -> str:
    """Words for a trace error's ``kind`` as a screen shows it: ``NoRoute`` -> "no SKILL
    matched the case"; a kind this build does not know -> "an error" (its message, shown
    beside, says the rest)."""
    try:
        return ErrorKind(str(kind)).words
    except ValueError:
        return "an error"


class LightragPresetName(StrEnum):
    """The LightRAG baseline's settings (see ``workbench.audit.baselines.lightrag_presets``):
    the project's defaults, or the first paper's appendix B.5."""

    DEFAULT = "default"
    PAPER = "paper"


VIOLATION = "violation"
COMPLIANT = "compliant"


class Label(StrEnum):
    """A case's gold label as the datasets write it."""

    POSITIVE = "positive"  # the reply complies with the policy
    NEGATIVE = "negative"  # the reply violates it

    @property
    def is_violation(self) -> bool:
        return self is Label.NEGATIVE

    @property
    def word(self) -> str:
        """The analyst's word: "violation" or "compliant"."""
        return verdict_word(self.is_violation)


def label_violation(label: object) -> bool | None:
    """True for a ``negative`` gold label (a violation), False for ``positive``, None for
    anything else (no label, or a value that is not a label)."""
    return Label(label).is_violation if label in _LABEL_VALUES else None


def verdict_word(violation: bool) -> str:
    """The analyst's word for a violation flag: "violation" or "compliant"."""
    return VIOLATION if violation else COMPLIANT


_LABEL_VALUES = frozenset(values(Label))
