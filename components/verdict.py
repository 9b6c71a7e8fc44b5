"""The verdict card: the decided label (violation, compliant, to review) and how likely, the
reason, the words of the reply it rests on (highlighted in the reply), and each rule behind a
violation with its source span highlighted in the SKILL text.

The card cannot contradict itself, nor any list beside it: its header, words, reason, rules
and the colour of its evidence all come from one decided record
(:class:`~workbench.decision.DecidedVerdict`, what every surface reads). Only a verdict
without a score under the dataset's setting shows the judge's bare yes/no, and the card says
so. Where the judge's own answer differs from the decision, one plain line says which way each
went; a case to review says why; where the gold label differs, a warning says that too. The
probability line names the decision setting that decided ("setting version 2", "the built-in
activation scorer"), with the glossary's words in its tooltip.

A page that keeps its decision buttons in the first screen (Review) passes them as
``actions``, drawn right under the label, and draws the reply with its marked words itself
(:func:`show_marked_reply`) beside the card."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components.links import graph_link
from components.safe import md
from components.spans import highlighted_html, show_source
from workbench import words
from workbench.audit.evidence import with_quotes
from workbench.audit.trace import AuditTrace, Verdict
from workbench.decision import (
    BY_EXPLAIN,
    BY_JUDGE,
    BY_WORKBENCH,
    COMPLIANT,
    MIN_RANKING_AUROC,
    REVIEW,
    VIOLATION,
    Decided,
    DecidedVerdict,
    DecisionSetting,
    ScoreSource,
    decide,
    decided_verdict,
    judgement,
)
from workbench.graph import PolicyIndex, Span
from workbench.vocabulary import error_words, label_violation, verdict_word
from workbench.words import BUILTIN_TERM, gold_word, help_for, percent, setting_words

# Evidence of a violation is marked red; evidence of a compliant decision (the words that
# show the reply kept the rule) a neutral blue-grey: red there read as "violation" (issue 44).
# Both backgrounds are light in either theme, so the marked text sets its own dark colour.
_REPLY_STYLE = (
    "<style>.wb-reply{white-space:pre-wrap;line-height:1.5;color:inherit;padding:0.5rem 0.7rem;"
    "border-left:3px solid rgba(128,128,128,0.5);background:rgba(128,128,128,0.08)}"
    ".wb-reply mark{padding:0 1px;color:#1b1f24}"
    ".wb-reply mark.wb-violation{background:#ffb3b3}"
    ".wb-reply mark.wb-compliant{background:#d3e0ec}</style>"
)


def locate_rule(index: PolicyIndex, closure: dict[str, list[str]], rule_id: str):
    """(skill, rule) for a cited id: first in the judged closure's SKILLs, then anywhere."""
    for name, ids in closure.items():
        if rule_id in ids and name in index.skills:
            skill = index.skills[name]
            return skill, skill.graph.rules.get(rule_id)
    for skill in index:
        if rule_id in skill.graph.rules:
            return skill, skill.graph.rules[rule_id]
    return None, None


def show_evidence(reply: str, evidence: list[dict], violation: bool = True,
                  caption: str = "Words of the reply the verdict rests on") -> bool:
    """The reply with the verdict's evidence spans marked (escaped text, our marks only);
    red for a violation's, neutral for a compliant decision's. False (nothing drawn) when no
    span is found in the reply."""
    spans = [Span(e["start"], e["end"]) for e in with_quotes(reply, evidence)]
    if not spans:
        return False
    kind = "violation" if violation else "compliant"
    st.caption(caption)
    st.html(_REPLY_STYLE + f'<div class="wb-reply" data-testid="wb-evidence" data-kind="{kind}">'
            f"{highlighted_html(reply, spans, mark_class=f'wb-{kind}')}</div>")
    return True


def show_marked_reply(trace: AuditTrace, record: DecidedVerdict, reply: str) -> bool:
    """The reply with the words the label rests on marked; under a compliant decision over
    the judge's "violation", the words the judge quoted, unpainted and captioned as the
    judge's (not what the label rests on). False when there are no such words to mark (the
    caller shows the reply plainly)."""
    if record.evidence:
        return show_evidence(reply, list(record.evidence), record.violation)
    if record.label == COMPLIANT and trace.verdict is not None and trace.verdict.evidence:
        return show_evidence(reply, trace.verdict.evidence, False,
                             "Words of the reply the judge quoted for its own answer")
    return False


def verdict_decision(subject: AuditTrace | Verdict | None,
                     setting: DecisionSetting | None) -> Decided | None:
    """How a trace's (or a bare verdict's) score is decided under ``setting`` (the one rule,
    ``workbench.decision.decide``; a trace brings its activation score from the setting's
    ``case_scores``), or, without a score under the setting, the judge's yes/no as it stands
    (``source`` VERDICT). None without a verdict. The card itself reads the decided record."""
    verdict = subject.verdict if isinstance(subject, AuditTrace) else subject
    if verdict is None:
        return None
    return judgement(subject, setting) or decide(setting, verdict=bool(verdict.violation))


def record_of(trace: AuditTrace, setting: DecisionSetting | None,
              verdict: DecidedVerdict | None = None, version: int | None = None) -> DecidedVerdict:
    """The decided record the card shows: ``verdict`` when the page has it (with the stored
    explanation and decisions), else built from the trace under ``setting`` (``version``: its
    version when the page knows it; None names no setting, never the built-in scorer's 0)."""
    if verdict is not None:
        return verdict
    return decided_verdict(trace, saved=(version, setting) if setting is not None else None)  # type: ignore[arg-type]


def decided_word(trace: AuditTrace | Verdict | None, setting: DecisionSetting | None,
                 verdict: DecidedVerdict | None = None) -> str | None:
    """"violation" / "compliant" / "review" as the card says it, or None without a verdict:
    lists beside the card use it so a row never says otherwise. A bare ``Verdict`` (no trace,
    so no rule to check) is read by its score's decision alone."""
    if isinstance(trace, Verdict):
        d = verdict_decision(trace, setting)
        return None if d is None else verdict_word(d.violation)
    if trace is None or trace.verdict is None:
        return None
    return record_of(trace, setting, verdict).label


def disagreement_line(verdict: Verdict, decided: Decided) -> str | None:
    """One plain line when the judge's own answer differs from the decision, else None."""
    if decided.source is ScoreSource.VERDICT or decided.violation == bool(verdict.violation):
        return None
    score = "its probability" if decided.source is ScoreSource.VERBAL else "the activation score"
    return (f"The judge answered {verdict_word(verdict.violation)}; at this dataset's setting "
            f"{score} decides {verdict_word(decided.violation)}.")


def gold_line(gold: str | None, label: str | bool) -> str | None:
    """"Gold label: violation — the verdict says compliant" when the gold label disagrees
    with the label shown, else None (no label, they agree, or the case is to review)."""
    truth = label_violation(gold)
    if isinstance(label, bool):
        label = verdict_word(label)
    if truth is None or label not in (VIOLATION, COMPLIANT) or truth == (label == VIOLATION):
        return None
    return f"Gold label: {gold_word(gold)} — the verdict says {label}"


def no_ranking_line(setting: DecisionSetting | None) -> str | None:
    """What to say when the saved setting's score does not rank cases here, else None."""
    if setting is None or setting.ranks:
        return None
    auc = (setting.cross_validated or {}).get("auroc")
    measured = (f" (out of fold it told violations from compliant cases apart {percent(auc)} of "
                "the time, where chance is 50 % and at least "
                f"{percent(MIN_RANKING_AUROC)} is needed)") if isinstance(auc, float) and auc == auc else ""
    return ("The score does not rank cases on this dataset" + measured + ": its probability "
            "is no better than a guess here, so nothing is decided automatically. Check this "
            "verdict yourself.")


REASON_CAPTIONS = {
    BY_JUDGE: "Reason given by the judge",
    BY_EXPLAIN: "Rule and words found for the score's decision (the judge, asked again)",
    BY_WORKBENCH: "Why",
}


def show_verdict(trace: AuditTrace, index: PolicyIndex | None, key: str, reply: str | None = None,
                 setting: DecisionSetting | None = None, gold: str | None = None,
                 verdict: DecidedVerdict | None = None, *, version: int | None = None,
                 actions: Callable[[], None] | None = None) -> None:
    """The card of ``trace``'s decided record (``verdict``, the page's; else built under
    ``setting``, the saved setting that reads the score — none: 0.5, uncalibrated — of
    ``version``). ``reply``: the audited reply, to mark the evidence in (None: the page shows
    it, see :func:`show_marked_reply`); ``gold``: the case's gold label, to say when it
    disagrees with the label; ``actions``: what the page draws right under the label (Review:
    the decision buttons, so they stay in the first screen), also under an error."""
    error = trace.error
    with st.container(border=True, key=f"verdict_{key}"):
        if error is not None:
            st.error(f"No verdict — {md(error_words(error.kind))}: {md(error.message)}")
            if actions is not None:
                actions()
            return
        record = record_of(trace, setting, verdict, version)
        if record.decided is None:
            st.info("Not judged (run with a judge to get a verdict).")
            if actions is not None:
                actions()
            return
        _header(trace.verdict, record, setting)
        if actions is not None:
            actions()
        if line := gold_line(gold, record.label):
            st.warning(line, icon=":material/balance:")
        if reply is not None:
            show_marked_reply(trace, record, reply)
        if trace.parts:
            st.caption(f"Judged in {len(trace.parts)} parts: the context did not fit the "
                       "judge's window whole (parts listed with the trace steps).")
        if record.label != REVIEW:  # a case to review says why in its header
            st.caption(REASON_CAPTIONS.get(record.reason_by, "Reason"))
            st.text(record.reason)
        elif record.judge_reason:  # and what the judge's own words said, as they were
            st.caption("The judge's own words (not the label)")
            st.text(record.judge_reason)
        _rules(trace, record, index)


def _rules(trace: AuditTrace, record: DecidedVerdict, index: PolicyIndex | None) -> None:
    verdict = trace.verdict or Verdict(False, "", [])  # scored only: no judge's answer
    if verdict.unknown_rule_ids:
        st.warning("Cited ids not in the judged context (flagged): "
                   + md(", ".join(verdict.unknown_rule_ids)))
    if record.violation and record.reason_by == BY_JUDGE and not verdict.reason_cites:
        st.warning("The reason cites none of the violated rule ids.")
    # The rules behind a violation; under any other label the judge's citations are not
    # "violated rules", only what the judge named.
    shown = [("Violated rule", rid) for rid in record.rules] if record.violation else [
        ("Rule the judge cited", rid) for rid in verdict.violated_rules]
    for cited_as, rid in shown:
        skill, rule = locate_rule(index, trace.closure, rid) if index else (None, None)
        # The id is md-escaped text; the link's values are percent-encoded (no ")" or
        # space can end the markdown link early).
        st.markdown(f"**{cited_as} [{md(rid)}]({graph_link(skill.name, rid)})**" if rule
                    else f"**Cited {md(rid)}**")
        if rule is None:
            st.caption("(not a rule of the loaded index — a passage id or an unknown id)")
            continue
        st.text(f"{skill.name} · {rule.modality}\nWhen: {rule.condition}\nThen: {rule.action}")
        if rule.spans:
            show_source(skill.source, rule.spans, context_chars=250)
    if verdict.per_rule:
        with st.expander(f"Per-rule answers ({len(verdict.per_rule)})"):
            st.dataframe(verdict.per_rule, hide_index=True, width="stretch")


LABEL_WORDS = {VIOLATION: "Violation", COMPLIANT: "Compliant", REVIEW: "To review"}


def _header(verdict: Verdict | None, record: DecidedVerdict,
            setting: DecisionSetting | None) -> None:
    """The coloured header and the words under it, both from ``record`` (``verdict``: the
    judge's answer, None for a case scored only)."""
    decided = record.decided
    assert decided is not None  # a judged trace's record
    if record.label == VIOLATION:
        st.error(LABEL_WORDS[VIOLATION], icon=":material/error:")
    elif record.label == COMPLIANT:
        st.success(LABEL_WORDS[COMPLIANT], icon=":material/check_circle:")
    else:
        st.warning(LABEL_WORDS[REVIEW], icon=":material/help:")
    if decided.source is ScoreSource.VERDICT:
        st.caption("No score for this verdict under the dataset's setting"
                   + (" (it scores the judge's activations, not captured for this case)"
                      if setting is not None and setting.scorer is not None else "")
                   + ": the judge's own answer is shown.")
    else:
        by = record.setting_version
        st.markdown(f"**{md(words.probability(decided))}**"
                    + ("" if by is None else f" · {md(setting_words(by))}"),
                    help=_probability_help(verdict, decided, setting, by))
        if verdict is not None and (line := disagreement_line(verdict, decided)):
            st.markdown(md(line))
    if record.label == REVIEW and record.doubt:
        st.markdown(md(record.doubt))
    if line := no_ranking_line(setting):
        st.warning(line)
    elif decided.automatic:
        st.caption("Confident enough to be decided without a person at this dataset's "
                   "guaranteed error rate.")


def setting_help(version: int | None) -> str:
    """The glossary's words for the setting that decided: the built-in activation scorer's
    (version 0), else the decision setting's."""
    return help_for(BUILTIN_TERM if version == 0 else "decision setting") or ""


def _probability_help(verdict: Verdict | None, decided: Decided,
                      setting: DecisionSetting | None, version: int | None = None) -> str:
    source = (verdict.probability_source if verdict is not None else "") or "unknown"
    how = ("the judge's own probability for its verdict token" if source == "logprobs"
           else f"the share of {source.split(':')[-1]} sampled answers that found a violation"
           if source.startswith("sampled") else source)
    builtin = version == 0
    if decided.source is ScoreSource.ACTIVATIONS:
        how = ("the built-in activation scorer, reading the judge's activations" if builtin
               else "a scorer reading the judge's activations, fitted on labelled cases")
    threshold = setting.threshold if setting is not None else 0.5
    cal = ("calibrated on the labelled cases it was fitted on (no setting is saved for this "
           "dataset)" if builtin and decided.calibrated
           else "calibrated on labelled cases of this dataset" if decided.calibrated
           else "not calibrated: no setting with a calibration was saved for this dataset")
    by = "" if version is None else f" Decided by {setting_words(version)}: {setting_help(version)}"
    return (f"Probability of violation {percent(decided.probability)}, from {how}; decided a "
            f"violation at {percent(threshold)} or above; {cal}. The percentage is the chance "
            f"the stated outcome is right.{by}")
