"""The first thing a new user reads: what the workbench does, in three steps with links, and
how far the judge's verdicts can be trusted on the bundled data (from the stored figures,
never claimed beyond them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import streamlit as st
from streamlit.errors import StreamlitAPIException

from components.activation_study import BUNDLED, study_results
from workbench.words import plural

STEPS = (
    ("replay", "1. Replay a case",
     "pick an audited reply and see why it was judged as it was: the SKILL it was routed to, "
     "the rules the closure gathered with their source text, and the verdict with its words "
     "in the reply."),
    ("review", "2. Review the queue",
     "go through the verdicts most in doubt first; confirm, overturn or mark the wrong rule "
     "by keyboard. Every decision is recorded under your name and can be undone."),
    ("graph", "3. Check the rules",
     "open a SKILL's rule graph, fix a rule or a require edge, and before you save it see "
     "which audited cases hold the rules you changed (“Check impact on audited cases”)."),
)


DEMO_SETTING = BUNDLED.parent.parent / "fixtures" / "demo" / "decision_setting.json"


def demo_line() -> str:
    """What the demo's saved setting does on the demo's own labels (empty without it)."""
    import json

    try:
        fitted = json.loads(DEMO_SETTING.read_text(encoding="utf-8"))["setting"]["fitted_on"]
        t = fitted["demo_transfer"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return (f"The demo decides with a probe learned on airline cases ({fitted['scorer']}), "
            f"never shown the demo's labels: on the demo's {t['cases']} labelled cases it ranks "
            f"violations at AUROC {t['auroc']:.2f} where the judge's own probability reaches "
            f"{t['verbal_auroc']:.2f}, and its decisions are right on {t['accuracy']:.0%} of "
            f"them (the judge's own answers on {t['verbal_accuracy_bare']:.0%}).")


def judge_figures_line() -> str:
    """One sentence on the judge's measured figures, from the bundled study (empty without)."""
    results = study_results(BUNDLED)
    if not results:
        return ""
    data = results[-1][1]
    figs = data["figures"]
    verbal = figs.get("verbal probability", {}).get("auroc")
    best_name, best = max(((k, v) for k, v in figs.items() if k != "verbal probability"),
                          key=lambda kv: kv[1]["auroc"], default=(None, None))
    if verbal is None or best is None:
        return ""
    return (f"On {data['n']} labelled CompliBench airline cases the embedded judge's own "
            f"probability ranks violations above compliant replies {verbal:.0%} of the time "
            f"(AUROC {verbal:.2f}); a score learned from its hidden states ({best_name}) does "
            f"{best['auroc']:.0%} (AUROC {best['auroc']:.2f}, 95 % interval {best['low']:.2f}–"
            f"{best['high']:.2f}), out of fold. Treat single verdicts as a first pass for a "
            "person, not a decision, unless the Review page shows an error-rate guarantee.")


def decided_line(dataset: str, labels: Iterable[str], agree: int, with_gold: int,
                 decided_by: str = "") -> str:
    """What the workbench decides on ``dataset`` now, from its decided records (the labels
    every page shows): "On the stored dataset demo the workbench decides 5 violations and 9
    compliant replies and sends 7 to review; 9 of the 14 decided with a gold label agree with
    it." ``decided_by``: which setting decided, in words (``workbench.words.decided_by``),
    said after the counts. Empty without any record."""
    counts = Counter(labels)
    if not counts:
        return ""
    decided = counts["violation"] + counts["compliant"]
    text = (f"On the stored dataset {dataset} the workbench decides "
            f"{plural(counts['violation'], 'violation')} and "
            f"{plural(counts['compliant'], 'compliant reply', 'compliant replies')} and sends "
            f"{counts['review']} to review" + (f", decided by {decided_by}" if decided_by else ""))
    if with_gold:
        text += f"; {agree} of the {with_gold} decided with a gold label agree with it"
    elif decided:
        text += " (no gold labels to check them against)"
    return text + ". Replay and Review show each case's label, rule and words."


def step_link(url_path: str, title: str) -> None:
    """A link to the app's page ``url_path`` that opens in this tab, in this session (a
    Markdown link opened a new tab, issue 56): ``st.page_link`` where the app's navigation
    knows the page; a plain relative link where a page runs on its own (tests, embedding),
    which has no navigation to link through."""
    try:
        st.page_link(f"pages/{url_path}.py", label=f"**{title}**")
    except StreamlitAPIException:  # StreamlitPageNotFoundError: no navigation here
        st.markdown(f"**[{title}]({url_path})**")


def show_start_here(first_visit: bool, decided: str = "", decided_help: str | None = None) -> None:
    """``decided``: :func:`decided_line` of a stored dataset (the page reads its records);
    ``decided_help``: the glossary's words for the setting it names (its tooltip)."""
    with st.expander("Start here: what this workbench does", expanded=first_visit):
        st.markdown("The workbench checks an AI agent's replies against written policies "
                    "(SKILLs). Each policy is compiled into rules linked by what each rule "
                    "needs; an audit gives a judge model just the rules that govern a reply, "
                    "and shows you exactly why it decided.")
        cols = st.columns(len(STEPS))
        for col, (url_path, title, text) in zip(cols, STEPS, strict=True):
            with col:
                step_link(url_path, title)
                st.caption(text)
        for line, why in ((judge_figures_line(), None), (demo_line(), None),
                          (decided, decided_help)):
            if line:  # plain text: the page's own notices keep st.info for themselves
                st.markdown(line, help=why)
