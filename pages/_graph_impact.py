"""Graph page: what an edit does to the audited cases, *before* it is saved (issue 56 item 2).

An edit is a draft until saved: the rule panel's form ("Check impact", beside "Save rule") or
the unsaved edits of the tables. Its impact is :func:`workbench.audit.impact.affected_cases`
over the stored cases of the datasets audited against the SKILL: the cases whose closure
holds an edited rule (from the stored trace: what the judge saw) and those whose closure the
edit changes. A sample of them can be re-judged with the draft rules, the estimate shown
before the press (``pages._model_start``: measured speed, the model's start-up as a step of
its own); the re-judge is a preview, nothing is stored. Page-private: it reads the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine

from components import links
from components.errors import show_error
from components.glossary import column_help
from components.model_run import Step, run_steps
from components.safe import md
from pages import _audit_cache
from pages._model_start import (
    MEASURED,
    calls_estimate,
    needs_startup,
    startup_estimate,
    startup_steps,
)
from store import audit_repo
from workbench.audit import AuditOptions
from workbench.audit.impact import AffectedCase, affected_cases, edited_rules, reaudit
from workbench.audit.trace import AuditTrace
from workbench.errors import WorkbenchError
from workbench.graph import PolicyIndex, SkillGraph
from workbench.llm import load_config
from workbench.llm.speed import describe_duration
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import ModelRole, StrategyName, verdict_word
from workbench.words import plural

# What a judge prompt holds besides the case and the rules (template, schema), for estimates
# of cases whose stored trace has no judge call to measure.
PROMPT_OVERHEAD_TOKENS = 700
SAMPLE = 5  # cases re-judged by default: minutes, not an hour, on the embedded model


@dataclass(frozen=True)
class Draft:
    """An edit to check: the SKILL as it stands (``base``, version ``version``) and as the
    edit makes it (``after``), with a word on what the edit is. ``saved``: ``after`` is a
    saved version (a comparison of versions), else a draft not saved yet."""

    base: SkillGraph
    version: int
    after: SkillGraph
    source: str  # e.g. "your edit of MOR-S009", "the unsaved edits in the tables above"
    saved: bool = False
    rules: str = "the draft rules"  # what a re-judge judges with, in words


def stored_traces(eng: Engine, dataset: str) -> dict[str, AuditTrace]:
    """The newest stored cdg trace of each case of ``dataset``, a judged one first (a later
    contexts-only run does not hide the verdict)."""
    out: dict[str, AuditTrace] = {}
    for _run, t in _audit_cache.records(eng, dataset):
        if t.strategy != StrategyName.CDG:
            continue
        if t.verdict is None and t.id in out and out[t.id].verdict is not None:
            continue
        out[t.id] = t
    return out


def audited_datasets(eng: Engine, skill_name: str) -> list[str]:
    """Datasets whose stored traces judged rules of ``skill_name``; when none did, every
    dataset with stored cases (their closures are then computed)."""
    stored = audit_repo.datasets(eng)
    audited = [d for d in audit_repo.trace_datasets(eng) if d in stored
               and any(t.closure.get(skill_name) for t in stored_traces(eng, d).values())]
    return audited or stored


def find(eng: Engine, dataset: str, before: PolicyIndex, after: PolicyIndex,
         skill_name: str, options: AuditOptions | None = None) -> list[AffectedCase]:
    cases = list(_audit_cache.cases(eng, dataset).values())
    return affected_cases(cases, skill_name, before, after, audited=stored_traces(eng, dataset),
                          options=options)


def with_draft(index: PolicyIndex, skill: SkillGraph) -> PolicyIndex:
    """``index`` with ``skill`` in place of its stored version (or added last)."""
    return PolicyIndex({**index.skills, skill.name: skill}.values())


def summary(found: Sequence[AffectedCase], dataset: str, edits: dict[str, list[str]]) -> str:
    """One line: how many cases the edit reaches, and through which rules (Markdown-safe)."""
    rules = ", ".join(sorted(edits))
    if not found:
        return md(f"No stored case of {dataset} holds {rules} in its closure, and no closure "
                  "changes: the edit changes no audited verdict's rules.")
    held = sum(1 for a in found if a.holds)
    moved = sum(1 for a in found if a.added or a.removed)
    parts = []
    if held:
        which = rules if len(edits) == 1 else f"an edited rule ({rules})"
        parts.append(f"**{plural(held, 'case')}** of {md(dataset)} "
                     f"{'holds' if held == 1 else 'hold'} {md(which)} in "
                     f"{'its' if held == 1 else 'their'} closure")
    if moved:
        parts.append(f"{'and ' if held else ''}**{plural(moved, 'case')}** "
                     f"{'changes' if moved == 1 else 'change'} closure")
    return " ".join(parts) + "."


def headline(eng: Engine, draft: Draft) -> str:
    """:func:`summary` of the draft on the first dataset audited against its SKILL."""
    datasets = audited_datasets(eng, draft.base.name)
    if not datasets:
        return "No stored cases to check yet."
    index = _current_index(eng, draft)
    found = find(eng, datasets[0], index, with_draft(index, draft.after), draft.base.name)
    return summary(found, datasets[0], edited_rules(draft.base, draft.after))


def rows(found: Sequence[AffectedCase], dataset: str) -> list[dict]:
    return [{"case": a.case_id,
             "closure holds": ", ".join(a.holds) or "–",
             "closure gains": ", ".join(a.added) or "–",
             "closure loses": ", ".join(a.removed) or "–",
             "stored verdict": verdict_word(a.violation) if a.violation is not None
             else ("not judged" if a.audited else "not audited"),
             "open": links.replay_link(dataset, a.case_id)} for a in found]


def show(eng: Engine, draft: Draft, dataset: str, key: str,
         options: AuditOptions | None = None) -> list[AffectedCase]:
    """The edit's impact on ``dataset``: the line, the table of cases, and the offer to
    re-judge a sample with the edited rules (``options``: how closures of cases without a
    stored trace are computed). Returns the cases found."""
    index = _current_index(eng, draft)
    after = with_draft(index, draft.after)
    edits = edited_rules(draft.base, draft.after)
    if not edits:
        st.info("The edit changes no rule and no require edge: no audited case is reached.")
        return []
    what = "; ".join(f"{rid} — {', '.join(words)}" for rid, words in sorted(edits.items()))
    state = "" if draft.saved else ", not saved"
    st.caption(md(f"Checked {draft.source} against version {draft.version}{state}: {what}."))
    found = find(eng, dataset, index, after, draft.base.name, options)
    st.markdown(summary(found, dataset, edits))
    if found:
        table = rows(found, dataset)
        config = column_help(table[0])
        config["open"] = st.column_config.LinkColumn("open", display_text="Replay ↗",
                                                     help="Open this case on Replay")
        st.dataframe(table, hide_index=True, width="stretch", key=f"{key}_table",
                     column_config=config)
        rejudge(eng, dataset, found, after, key, draft.rules)
    return found


def _current_index(eng: Engine, draft: Draft) -> PolicyIndex:
    from pages._policy_cache import policy_index

    index = policy_index(eng)
    return with_draft(index, draft.base) if index is not None else PolicyIndex([draft.base])


# -- re-judging a sample with the draft rules ------------------------------------------------

def sample(found: Sequence[AffectedCase], n: int) -> list[AffectedCase]:
    """The first ``n`` cases, those with a stored verdict first (their change can be read)."""
    return sorted(found, key=lambda a: a.violation is None)[:n]


def judge_prompt_tokens(eng: Engine, dataset: str, case_ids: Sequence[str]) -> list[int]:
    """A judge prompt's size per case: its stored trace's judge call, else the case's text,
    its stored context and the template's overhead."""
    traces = stored_traces(eng, dataset)
    cases = _audit_cache.cases(eng, dataset)
    sizes = []
    for cid in case_ids:
        t = traces.get(cid)
        calls = [c.prompt_tokens for c in (t.usage if t else []) if c.role == ModelRole.JUDGE
                 and not c.error]
        if calls:
            sizes.append(int(sum(calls) / len(calls)))
            continue
        case = cases.get(cid)
        text = count_tokens(" ".join([case.model_response, *(x.content for x in case.turns)])
                            ) if case else 0
        sizes.append(text + (t.context_tokens if t else 0) + PROMPT_OVERHEAD_TOKENS)
    return sizes


def estimate_words(eng: Engine, config, dataset: str, chosen: Sequence[AffectedCase]) -> str:
    """What the re-judge will take, before the press."""
    calls = plural(len(chosen), "judge call")
    if config is None:
        return f"{calls}; no estimate: the model configuration does not load."
    seconds, speed = calls_estimate(eng, config, ModelRole.JUDGE,
                                    judge_prompt_tokens(eng, dataset, [a.case_id for a in chosen]))
    when = (f"about {speed}" if seconds is not None else
            f"{speed}, so no estimate: the embedded model on a small CPU can take minutes a call")
    start = ""
    if needs_startup(config, [ModelRole.JUDGE]):
        about = startup_estimate(eng, config, [ModelRole.JUDGE])
        start = (" First the model starts, " + (f"about {describe_duration(about)} as measured."
                                               if about else "not timed here yet."))
    return f"{calls}, {when}.{start} A preview: nothing is stored."


def rejudge(eng: Engine, dataset: str, found: Sequence[AffectedCase], after: PolicyIndex,
            key: str, rules: str = "the draft rules") -> None:
    """The offer to re-judge a sample of ``found`` under ``after``: the estimate first, then
    the button; the verdicts are shown beside the stored ones, nothing is stored."""
    with st.expander(f"Re-judge a sample with {rules} ({plural(len(found), 'case')} found)"):
        n = int(st.number_input("Cases to re-judge", 1, len(found), min(SAMPLE, len(found)),
                                key=f"{key}_sample"))
        chosen = sample(found, n)
        try:
            config = load_config()
        except WorkbenchError:
            config = None  # the press says what is wrong
        st.caption(md(f"Re-judges {', '.join(a.case_id for a in chosen)}: "
                      + estimate_words(eng, config, dataset, chosen)))
        if not st.button(f"Re-judge {plural(n, 'case')} with {rules}", key=f"{key}_rejudge",
                         wrap=True):
            return
        try:
            flips = _run(eng, dataset, chosen, after, rules)
        except WorkbenchError as exc:  # the configuration, or the model could not start
            show_error(exc, lead="The re-judge did not run: ")
            return
        st.dataframe([{"case": f.case_id,
                       "stored verdict": _word(f.before), f"with {rules}": _word(f.after),
                       "changed": "yes" if f.flipped else "no"} for f in flips],
                     hide_index=True, width="stretch", key=f"{key}_flips")
        changed = sum(f.flipped for f in flips)
        st.info(f"{plural(changed, 'verdict')} changed." if changed else "No verdict changed.")


def _word(violation: bool | None) -> str:
    return "–" if violation is None else verdict_word(violation)


def _run(eng: Engine, dataset: str, chosen: Sequence[AffectedCase], after: PolicyIndex,
         rules: str):
    from pages._state import model_gateway

    gateway = model_gateway()
    cases = _audit_cache.cases(eng, dataset)
    todo = [cases[a.case_id] for a in chosen if a.case_id in cases]
    previous = {a.case_id: a.violation for a in chosen}
    log = getattr(gateway, "usage_log", None)
    first = len(log) if log is not None else 0
    sizes = judge_prompt_tokens(eng, dataset, [c.id for c in todo])
    seconds, _ = calls_estimate(eng, gateway.config, ModelRole.JUDGE, sizes)
    main = Step(f"Re-judging {plural(len(todo), 'case')} with {rules}",
                lambda: reaudit(todo, after, previous, gateway, options=AuditOptions()),
                seconds, calls=len(todo),
                calls_done=(lambda: len(log) - first) if log is not None else None,
                source=MEASURED if seconds else "")
    return run_steps(startup_steps(eng, gateway.config, [ModelRole.JUDGE]), main)
