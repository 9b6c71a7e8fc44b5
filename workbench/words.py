"""Values as a person reads them: the one formatting layer of every screen (issue 44 item 4).

- :func:`plural`: counted nouns, "1 rule", "2 rules", "0 proposals" (issue 35); irregular
  plurals are passed explicitly (``plural(n, "analysis", "analyses")``).
- :func:`duration` / :func:`duration_ms`: "450 ms", "12 s", "3 min 9 s", "2 h 5 min".
- :data:`MISSING`: what stands where a value is missing or undefined ("–", never "None" or
  "nan"); :func:`value` and :func:`number` use it.
- :func:`probability`: one word band per probability range ("likely violation — 83 %"),
  :data:`LIKELY` the line of "likely".
- :func:`agreement`: κ and α with their band ("0.62 (substantial)"), or "too few decisions to
  measure" below :data:`MIN_AGREEMENT_DECISIONS`.
- :func:`label`: a field name as a plain label ("prompt_tokens" -> "prompt tokens",
  "latency_ms" -> "latency").

Pure Python, no Streamlit: the pages and the CLI share it. Strategies, judge modes and other
domain words stay in :mod:`workbench.vocabulary`.

The glossary lives here too: every metric and label an analyst meets, with the short help
text the pages put in tooltips and the Glossary page lists (:data:`TERMS`, :func:`help_for`).
The datasets store gold labels as ``positive``/``negative`` (CompliBench's words: a
*negative* conversation is one where the agent broke the policy); those words contradict the
red "Violation" next to them, so they never reach the screen: :func:`gold_word` turns them
into "violation"/"compliant".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.vocabulary import Label

if TYPE_CHECKING:
    from workbench.decision import Decided

# The dataset's label -> the word on screen. "negative" = the agent violated the policy.
GOLD_WORDS = {label.value: label.word for label in Label}
NO_GOLD = "no gold label"


def gold_word(label: object) -> str:
    """``"violation"``, ``"compliant"`` or ``"no gold label"`` for a stored gold label; any
    other value is shown as itself (never silently as one of the two)."""
    if label is None or label == "":
        return NO_GOLD
    return GOLD_WORDS.get(str(label).strip().lower(), str(label))


@dataclass(frozen=True)
class Term:
    name: str      # the label as it appears on screen (table column, metric)
    meaning: str   # one or two plain sentences: what it is and which way is better
    area: str      # the page or topic where it appears


BUILTIN_TERM = "built-in activation scorer"  # the glossary's name of the shipped scorer

TERMS: tuple[Term, ...] = (
    # -- labels and verdicts
    Term("violation", "The agent's reply breaks at least one rule of the policy. As a gold "
         "label: the dataset's reference answer says so.", "labels"),
    Term("compliant", "The agent's reply breaks no rule of the policy.", "labels"),
    Term("to review", "A case the workbench does not decide on its own: its score decided a "
         "violation but no rule of the judged closure stands behind it yet (\"Find the rule\" "
         "asks the judge), or it was not judged. Counted apart, never as a violation or as "
         "compliant.", "labels"),
    Term("in doubt", "Why a case is in the Review queue: it is to review, or its decision is "
         "less than \"likely\" (the card reads \"possible violation\" or \"probably "
         "compliant\").", "Review"),
    Term("Find the rule", "Asks the judge, on the same conversation, which rule of the judged "
         "closure the reply most likely breaks and which of its words break it, when a score "
         "decided a violation the judge's own words did not name. The rule must be one of the "
         "closure's and the words must be in the reply; otherwise none is shown and the case "
         "stays to review.", "Review"),
    Term("violation probability", "How likely the judge finds a violation, from its own "
         "token probabilities for the verdict (or the share of several sampled answers). Shown "
         "calibrated when a threshold was saved for the dataset from labelled cases.", "verdicts"),
    Term("how sure", "The judge's verdict in words with its confidence (\"likely violation — "
         "83 %\"), read at the dataset's saved threshold; \"uncalibrated\" when none is saved.",
         "Review"),
    Term("confidence", "The chance that a decision is right: the calibrated violation "
         "probability for a violation, one minus it for a compliant decision. Review can put the "
         "least confident first.", "Review"),
    Term("threshold", "The violation probability from which a case is decided a violation. "
         "Set from the costs of a miss and of a false alarm on the calibrated probability (0.5 "
         "when they are equal), not at the best F1 of the labelled cases; saved per dataset "
         "with its decision setting, every earlier version kept.", "Evaluate"),
    Term("AUROC", "How well the violation probability ranks violations above compliant "
         "replies: the chance that a random violation gets a higher probability than a random "
         "compliant reply. 0.5 is chance, 1.0 perfect.", "Evaluate"),
    Term("violation-F1 at threshold", "Violation-F1 when cases are decided by the threshold "
         "instead of the judge's bare yes/no, each fold scored with a threshold chosen on the "
         "other conversations. Higher is better.", "Evaluate"),
    Term("accuracy, most confident half", "Accuracy of the decisions on the half of the cases "
         "decided with the most confidence: what auto-deciding half of the queue would get "
         "right.", "Evaluate"),
    Term("auto-decide", "Decide the cases whose confidence is at least the chosen level "
         "automatically and send only the rest to people. The preview says how many it decides "
         "and how accurate that was on labelled cases.", "Review"),
    Term("guarantee", "The promise auto-decide makes: of the cases it decides without a "
         "person, at most the chosen share (α) are wrong, with 95 % confidence, tested on the "
         "dataset's labelled cases at ten confidence levels fixed before any label is read. "
         "With too few labels no level passes and nothing is decided automatically.", "Review"),
    Term("split-certified guarantee", "The same promise as the guarantee, made with one test "
         "instead of ten: the confidence level is chosen on the labelled cases of half the "
         "conversations and certified on the other half. Its certifying half needs fewer cases "
         "decided automatically (29 instead of 51 at α = 10 % with no error); counted over "
         "both halves it needs fewer labels once the confident cases are sometimes wrong.",
         "Review"),
    Term("labels needed", "How many labelled cases a promise at the chosen α needs before it "
         "can pass: from the binomial test and the error rate of the most confident half of "
         "the labelled cases so far, at the share of cases it would decide automatically. "
         "While that error rate is α or more no number is given: more labels cannot make that "
         "promise.", "Review"),
    Term("label next", "A Review order: the cases nobody has labelled yet (no gold label, no "
         "analyst's decision) that the current scorer is least sure of come first, one per "
         "conversation and SKILL in turn, so each label teaches the scorer most.", "Review"),
    # -- how the workbench decides
    Term("decision setting", "What turns the judge's answer into the workbench's decision on a "
         "dataset: where the score comes from (the judge's words or an activation scorer), its "
         "calibration, the threshold, whether the score ranks cases, and the auto-decide "
         "guarantee. Saved per dataset from labelled cases, every version kept (version 1, 2, "
         "…); with none saved, the built-in activation scorer decides where the judge's "
         "activations were kept, else the judge's own probability at 50 %.", "verdicts"),
    Term("activation scorer", "A score read from the judge's hidden states (its activations) "
         "while it judges a reply, learned from labelled cases: a linear probe, a whitening "
         "detector, or the probe with the judge's own probability. It often ranks violations "
         "better than the probability the judge states.", "verdicts"),
    Term(BUILTIN_TERM, "The activation scorer that ships with the workbench, fitted on every "
         "labelled case the project holds (CompliBench airlines and the demo's hand-written "
         "cases), none of them your dataset. It decides a dataset with no "
         "saved decision setting wherever the judge's activations were kept, before anyone "
         "labels a case there; a setting saved from your own labels replaces it.", "verdicts"),
    # -- policies and their graphs
    Term("SKILL", "A written policy an agent must follow: a Markdown file with a name and a "
         "description, versioned in the store. The workbench compiles each into rules (its "
         "CDG) and audits replies against them.", "policies"),
    Term("CDG", "Constraint dependency graph: a SKILL's atomic rules (condition, action, "
         "modality and the words they come from), linked by require edges. An audit shows the "
         "judge only the closure of the rules that match a reply.", "policies"),
    Term("seed rules", "The rules the audit starts from: those matching the conversation's "
         "keywords in the routed SKILLs.", "audit"),
    Term("closure", "The seed rules plus every rule they require, transitively: what the "
         "judge is shown.", "audit"),
    Term("require edge", "Rule A requires rule B when A cannot be judged without judging B "
         "first.", "audit"),
    Term("why in context", "The require path that brought the rule into the judge's "
         "context: the seed rule it starts from, then each rule requiring the next "
         "(seed R3 → R7 → R9: R3 requires R7, which requires R9).", "Replay"),
    Term("proposed edge", "A require edge the extraction suggests but does not use: a weak text "
         "cue, or one the default small model found alone. Dashed on the Graph page until an "
         "author accepts (a) or rejects (x) it; a rejected edge is not proposed again.", "Graph"),
    Term("edge provenance", "Where an edge came from: the model, a cue in the policy text "
         "(definition, cross-reference, procedure step, heading, continuation word) or an "
         "author. A rule kept by its wording ('must', 'never'...) although the model did not "
         "call it a rule says so in its tooltip.", "Graph"),
    # -- SKILL structure (Skills page)
    Term("coupling", "Require edges per rule: how much rules depend on each other. "
         "Higher means more rules must be judged together.", "Skills"),
    Term("density", "Rule text tokens per source-text token (cl100k tokenizer; a rule's "
         "condition and action): how much of the SKILL's text turns into rules. Higher means "
         "the text is packed with rules.", "Skills"),
    Term("complexity", "Density × coupling: one number for how hard a SKILL is to judge "
         "(the papers' C). Higher is harder.", "Skills, Scaling"),
    Term("max depth", "The longest chain of require edges.", "Skills"),
    Term("cycle", "Whether some rules require each other in a loop.", "Skills"),
    Term("source tokens", "Length of the SKILL's source text in tokens.", "Skills"),
    Term("largest block", "The extractor reads the SKILL in blocks of at most this many "
         "tokens; smaller blocks mean more model calls, larger ones more to read at once.",
         "Skills"),
    # -- audit results (Evaluate, Review)
    Term("ACC", "Accuracy: share of cases whose verdict matches the gold label; a case the "
         "judge did not decide counts as wrong.", "Evaluate"),
    Term("violation-F1", "How well violations are found: the balance of precision and "
         "recall, over judged cases.", "Evaluate"),
    Term("precision", "Of the cases flagged as violations, the share that really are.",
         "Evaluate"),
    Term("recall", "Of the real violations, the share that were flagged.", "Evaluate"),
    Term("gold in context", "Share of cases whose governing rules (from the gold label) "
         "were in the context shown to the judge.", "Evaluate"),
    Term("context tokens", "Tokens of policy text shown to the judge per case.", "Evaluate"),
    Term("ACC, 95 % interval", "The range the accuracy could take on other cases like these "
         "(Wilson score interval over the judged sample): wide on a small sample.", "Studies"),
    Term("model time", "Time the judge's model calls took for the point's sample, on this "
         "machine; answers read from the response cache count nothing.", "Studies"),
    Term("online tokens", "Tokens the audit spent on model calls per case (keywords and "
         "judge).", "Evaluate"),
    Term("Cohen's κ", "Cohen's kappa: agreement of the judge with the analysts' decisions "
         "beyond chance: 1 is perfect, 0 is chance level. Unreliable on a handful of "
         "decisions.", "Review"),
    Term("Krippendorff's α", "Krippendorff's alpha: agreement among several people beyond "
         "chance: 1 is perfect, 0 is chance level.", "Review, Annotate"),
    Term("Fleiss' κ", "Fleiss' kappa: agreement among several annotators beyond chance; – "
         "when fewer than two annotators labelled the same items.", "Annotate"),
    Term("agreement", "Share of items on which the annotators gave the same label.",
         "Annotate"),
    Term("agreement bands", "The word beside a κ: Landis & Koch's bands (Biometrics 33, 1977, "
         "p. 165): below 0 poor, 0–0.20 slight, 0.21–0.40 fair, 0.41–0.60 moderate, "
         "0.61–0.80 substantial, 0.81–1 almost perfect. Beside an α: Krippendorff's "
         "(Content Analysis, 2nd ed., 2004, p. 241): from 0.80 reliable, 0.667–0.80 enough "
         "for tentative conclusions only, below 0.667 unreliable.", "Review, Annotate"),
    Term("right verdict, wrong rule", "An analyst's decision that the violation shown is "
         "real but the rule behind it is not the one broken; the note names the rule that is. "
         "Counts as agreeing with the verdict.", "Review"),
    Term("analysts vs gold", "Share of reviewed verdicts where the analyst's own label (the "
         "label shown when confirmed, its opposite when overturned) matches the gold label.",
         "Review"),
    # -- procedures (Contracts)
    Term("PCR", "Protocol completion rate: share of conversations that reached an accepted "
         "end of the procedure.", "Contracts"),
    Term("RF-PCR", "Share that reached an accepted end without being shown feedback on a "
         "rejected step. With feedback withheld it equals PCR.", "Contracts"),
    Term("no-rejection PCR", "Share that reached an accepted end without a single rejected "
         "step, whether or not feedback was shown.", "Contracts"),
    Term("outcome rate", "Share of conversations whose task succeeded, among those with a "
         "known outcome.", "Contracts"),
    Term("hint rate", "Share of the agent's steps that would have been corrected.",
         "Contracts"),
    Term("mean credit", "Average verified progress per conversation, from 0 (none) to 1 "
         "(all milestones).", "Contracts"),
    # -- scaling (Scaling)
    Term("judge size", "Judge model size in billions of parameters.", "Scaling"),
    Term("a", "How fast the log-odds of a correct verdict grow with judge size (the "
         "coefficient of ln N; positive: bigger judges are right more often).", "Scaling"),
    Term("b", "How the log-odds of a correct verdict change with complexity (negative: "
         "harder policies are judged worse).", "Scaling"),
    Term("gamma", "Baseline log-odds of a correct verdict on one dataset (a column per "
         "dataset, named after it).", "Scaling"),
    Term("CV log loss", "Cross-validated log loss: how surprised the model is by correctness "
         "on sessions it was not fitted on (lower is better).", "Scaling"),
    Term("log loss above the best", "How much worse this model's CV log loss is than the "
         "best model's; within one standard error the simpler model is selected.", "Scaling"),
    Term("complexity effect", "P(correct) at the 90th complexity percentile minus at the "
         "10th: how much harder policies cost (negative: harder is judged worse).", "Scaling"),
)

# Statistic keys of workbench.annotation (agreement_report, judge_human_agreement) -> the
# words on screen; the raw keys ("n_items", "cohen_kappa") stay in JSON and the CLI.
STAT_NAMES = {
    "n_items": "items", "n_annotators": "annotators", "n_labels": "labels", "agree": "agree",
    "percent_agreement": "agreement", "cohen_kappa": "Cohen's κ", "fleiss_kappa": "Fleiss' κ",
    "krippendorff_alpha": "Krippendorff's α",
}
# Columns of the Scaling page's tables (``workbench.scaling``: kept raw in its JSON and CLI)
# -> the words on screen.
SCALING_NAMES = {
    "n_params": "parameters", "loglik": "log-likelihood", "cv_logloss": "CV log loss",
    "cv_se": "CV standard error", "delta_vs_best": "log loss above the best",
    "ci_low": "95% interval, low", "ci_high": "95% interval, high",
    "c_q10": "C at 10th percentile", "c_q90": "C at 90th percentile",
    "p_q10": "P(correct), C at 10th pct", "p_q90": "P(correct), C at 90th pct",
    "complexity_effect": "complexity effect", "gain_q10": "gain, C at 10th pct",
    "gain_q90": "gain, C at 90th pct", "delta_gain": "gain difference", "log_loss": "log loss",
    "mean_predicted": "mean predicted", "calibration_gap": "calibration gap",
    "ece": "calibration error (ECE)", "n": "rows", "params_b": "judge size",
}
# Columns of the annotation dataset report (``workbench.annotation.report.TABLE_COLUMNS``,
# kept raw in its CSV/JSONL) -> the words on screen.
REPORT_NAMES = {
    "n_extracted": "extracted rules", "n_reference": "reference rules", "matched": "matched",
    "f1": "F1", "rule_correctness": "rule correctness", "reference_annotators":
    "reference annotators",
}
# Why a statistic is blank, instead of "None".
NOT_APPLICABLE = "–"

# Annotation task codes (``workbench.annotation.labels``; the agreement report's rows) ->
# the words on screen.
TASK_WORDS = {
    "rule_correctness": "rule correctness (correct or not)",
    "rule_correctness_error_type": "rule correctness by error type",
    "reference_rule": "reference rules",
    "cdg_inspection": "CDG inspection (per criterion)",
}

# The "agreement bands" term: (lower bound, word), highest first.
KAPPA_BANDS = ((0.81, "almost perfect"), (0.61, "substantial"), (0.41, "moderate"),
               (0.21, "fair"), (0.0, "slight"))
ALPHA_BANDS = ((0.80, "reliable"), (0.667, "tentative only"))
KAPPAS = ("cohen_kappa", "fleiss_kappa", "Cohen's κ", "Fleiss' κ", "kappa")
ALPHAS = ("krippendorff_alpha", "Krippendorff's α", "alpha")


def agreement_word(value: float, statistic: str) -> str:
    """The band of an agreement statistic in words (the "agreement bands" term): Landis &
    Koch's for a κ, Krippendorff's for an α. Rounded to two decimals first, as shown."""
    v = round(float(value), 2)
    if statistic in ALPHAS:
        return next((word for low, word in ALPHA_BANDS if v >= low), "unreliable")
    if statistic not in KAPPAS:
        raise ValueError(f"no agreement bands for {statistic!r}; use a kappa or an alpha")
    if v < 0:
        return "poor"
    return next(word for low, word in KAPPA_BANDS if v >= low)


def agreement_text(value: float | None, statistic: str) -> str:
    """``"0.17 (slight)"``: two decimals and the band; "–" when undefined."""
    if value is None or value != value:  # None or NaN
        return NOT_APPLICABLE
    return f"{value:.2f} ({agreement_word(value, statistic)})"


_BY_NAME = {t.name.lower(): t for t in TERMS}


def help_for(name: str) -> str | None:
    """The meaning of the term shown as ``name`` (case-insensitive), or ``None``. A name like
    ``gamma_retail`` falls back to its family (``gamma``)."""
    key = name.strip().lower()
    term = _BY_NAME.get(key) or _BY_NAME.get(key.split("_", 1)[0])
    return term.meaning if term else None

MISSING = NOT_APPLICABLE  # "–": the glossary's word for "does not apply", one dash everywhere
# Below this many decisions a κ is noise ("0.00 (slight)" after one decision, issue 44).
MIN_AGREEMENT_DECISIONS = 10
TOO_FEW = "too few decisions to measure"

# Field names whose plain label is not just the name with spaces (units move to the value).
LABELS: Mapping[str, str] = {
    "latency_ms": "latency",
    "latency ms": "latency",
    "duration_ms": "duration",
    "elapsed_s": "time taken",
    "ctx_size": "context size",
    "n_items": "items",
    "n_rules": "rules",
    "cache_key": "cache key",
    "request_key": "request key",
}


def arrows(summary: str) -> str:
    """A computed change summary as it reads on screen: an edge "R5->R3" (how summaries are
    stored and printed by the CLI) as "R5 → R3", the arrow of every button and caption.
    For computed text only: an author's note is shown as written."""
    return summary.replace("->", " → ")


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one (thousands grouped: "1,000 traces")."""
    noun = singular if count == 1 else (plural_form or singular + "s")
    return f"{count:,} {noun}"


def is_missing(v: Any) -> bool:
    """None, NaN (float or numpy/pandas), or pandas' NA/NaT: a value that is not there."""
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, NA and NaT are not equal to themselves
    except (TypeError, ValueError):  # pandas.NA raises on bool(); arrays are not one value
        return type(v).__name__ in ("NAType", "NaTType")


def duration(seconds: float | None) -> str:
    """"450 ms" below a second, "8.5 s" below ten, "42 s", "3 min 9 s", "2 h 5 min"; "–"
    when unknown. Never a raw float of milliseconds."""
    if is_missing(seconds):
        return MISSING
    s = float(seconds)  # type: ignore[arg-type]
    if math.isinf(s):
        return MISSING
    if s < 1:
        return f"{round(s * 1000)} ms"
    if s < 10:
        return f"{s:.1f} s".replace(".0 s", " s")
    whole = round(s)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        m, rest = divmod(whole, 60)
        return f"{m} min" + (f" {rest} s" if rest else "")
    h, rest = divmod(whole, 3600)
    m = round(rest / 60)
    if m == 60:
        h, m = h + 1, 0
    return f"{h} h" + (f" {m} min" if m else "")


def duration_ms(ms: float | None) -> str:
    """:func:`duration` of a time given in milliseconds (``latency_ms`` fields)."""
    return MISSING if is_missing(ms) else duration(float(ms) / 1000.0)  # type: ignore[arg-type]


def number(v: float | int | None, decimals: int = 2) -> str:
    """A number to read: integers grouped ("12,345"), other values with at most ``decimals``
    decimals, trailing zeros dropped ("0.86", "1,555.33", "3"); "–" when missing."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    f = float(v)  # type: ignore[arg-type]
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    text = f"{f:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def percent(share: float | None, decimals: int = 0) -> str:
    """A share 0..1 as a percentage, the one way every screen writes one: "83 %", "7.9 %"
    (``decimals``), "–" when missing. The space is the house style of the cards' "likely
    violation — 83 %" and the guarantee's "at most 10 % wrong"."""
    if is_missing(share):
        return MISSING
    return f"{100 * float(share):.{decimals}f} %"  # type: ignore[arg-type]


def value(v: Any) -> str:
    """Any single value for a cell or a caption: missing -> "–", booleans -> yes/no,
    numbers through :func:`number`, everything else as its text."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        return number(v)
    try:  # numpy scalars
        import numbers

        if isinstance(v, numbers.Number):
            return number(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pass
    return str(v)


LIKELY = 0.8  # confidence from which a decision reads "likely"


def probability(decided: Decided | None) -> str:
    """"likely violation — 83 %", "possible violation — 58 %", "probably compliant — 65 %",
    "likely compliant — 91 %" (the probability of the outcome named, ``+ " (uncalibrated)"``
    without a calibration); "–" without a score. One band per range: "likely" from
    :data:`LIKELY`, else "possible" (violation) / "probably" (compliant)."""
    if decided is None or decided.confidence is None:
        return MISSING
    word = "violation" if decided.violation else "compliant"
    pct = round(100 * decided.confidence)
    # the band follows the number shown, so two rows reading "80 %" never differ in words
    strength = ("likely" if pct >= round(100 * LIKELY)
                else "possible" if decided.violation else "probably")
    return (f"{strength} {word} — {percent(decided.confidence)}"
            + ("" if decided.calibrated else " (uncalibrated)"))


BUILTIN_SCORER = "the built-in activation scorer"


def setting_words(version: int | None) -> str:
    """Which decision setting decided, as a page or command says it: version 0 is
    "the built-in activation scorer" (``workbench.decision.BUILTIN_VERSION``: shipped with the
    product, no dataset's own), a saved one "setting version 3", none "no saved setting (the
    judge's words at 50 %)". Never "v0"."""
    if version is None:
        return "no saved setting (the judge's words at 50 %)"
    if version == 0:  # workbench.decision.BUILTIN_VERSION: words imports no decision module
        return BUILTIN_SCORER
    return f"setting version {version}"


def decided_by(versions: Iterable[int | None]) -> str:
    """Which settings decided a set of cases, from their records' ``setting_version``: "the
    built-in activation scorer", "setting version 3", "the judge's words (no saved setting)",
    or, where some cases had no score under the setting, "... where it has a score, else the
    judge's words"; "–" for no case."""
    found = set(versions)
    if not found:
        return MISSING
    named = sorted(v for v in found if v is not None)
    words = ", ".join(setting_words(v) for v in named)
    if not named:
        return "the judge's words (no saved setting)"
    if None in found:
        where = ("where the judge's activations were kept" if named == [0]
                 else "where it has a score")
        return f"{words} {where}, else the judge's words"
    return words


def agreement(v: float | None, decisions: int, statistic: str = "Cohen's κ",
              minimum: int = MIN_AGREEMENT_DECISIONS) -> str:
    """A κ or α with its band ("0.62 (substantial)"); "too few decisions to measure" on
    fewer than ``minimum`` decisions (a κ of one decision reads "0.00 (slight)", which is
    noise, not slight agreement); "–" when undefined."""
    if decisions < minimum:
        return TOO_FEW
    return agreement_text(v, statistic)


def label(field: str) -> str:
    """A field name as a plain label: "prompt_tokens" -> "prompt tokens", "latency_ms" ->
    "latency" (see :data:`LABELS`); a name without underscores is returned as it is."""
    if field in LABELS:
        return LABELS[field]
    return field.replace("_", " ")


def labelled(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with plain labels for its keys (values unchanged)."""
    return {label(str(k)): v for k, v in row.items()}
