"""Review with a guaranteed error rate (issue 48 item 6): the analyst chooses α (the largest
share of wrong automatic decisions they accept) and what a missed violation costs against a
false alarm; the page chooses the confidence level on the dataset's labelled cases with the
learn-then-test guarantee of ``workbench.decision`` (``_guarantee``) and says, before anything is
recorded, the coverage it buys, the bound and how many labelled cases it rests on. Applying
records decisions only for the verdicts at or above that level.

The promise can be made two ways (issue 57 item 5): *tested at ten levels* (the guarantee
above) or *split-certified* (the level chosen on half the conversations' labelled verdicts and
certified on the other half by one test, ``workbench.review.labelling.split_auto``): the same
promise. Under them the panel says how many more labelled cases the promise at the chosen α
needs either way (``workbench.review.labelling.forecast_words``), and which needs fewer.

Page-private: it reads the dataset's labelled verdicts as Evaluate's calibration does
(``store.labelled``; here from the page's cached reads) and records through
``store.review``. :func:`plan_guarantee` and :func:`labelled_of` are the logic, without
Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st
from sqlalchemy.engine import Engine

from components import identity, queue_nav
from components.safe import md
from pages._review_decide import record_decisions
from workbench.audit.cases import AuditCase
from workbench.audit.trace import AuditTrace, latest_per_case, trace_key
from workbench.decision import (
    DEFAULT_DELTA,
    GRID,
    MIN_RANKING_AUROC,
    DecisionSetting,
    add_verbal_guarantee,
    auroc,
    cost_threshold,
    guarantee_dict,
    reviewed_truth,
    scored_traces,
    smallest_testable,
)
from workbench.review.labelling import SPLIT, forecast_words, queue_forecast, split_auto
from workbench.review.queue import QueueItem, ReviewDecision, plan_auto_decisions
from workbench.vocabulary import label_violation
from workbench.words import help_for, percent, plural

ALPHAS = (0.05, 0.10, 0.20)
MISS_COSTS = (0.5, 1.0, 2.0, 5.0, 10.0)  # a missed violation, in false alarms
MIN_LABELLED = 10
FLASH = "rv_auto_flash"
TESTED = "tested"
HOW = {TESTED: "tested at ten levels", SPLIT: "split-certified: one test, on half the conversations"}


@dataclass(frozen=True)
class Labelled:
    """The dataset's labelled verdicts that carry the judge's probability."""

    probabilities: tuple[float, ...] = ()
    truth: tuple[bool, ...] = ()
    groups: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.probabilities)


@dataclass(frozen=True)
class AutoGuarantee:
    """What auto-decide at ``alpha`` would be: the setting its decisions are made under
    (the saved one with the chosen costs and the guarantee), or why it is refused."""

    alpha: float
    miss_cost: float
    setting: DecisionSetting | None  # None: refused
    refusal: str | None
    labelled: int
    auroc: float

    @property
    def level(self) -> float | None:
        return None if self.setting is None else self.setting.auto_level


def plan_guarantee(saved: DecisionSetting | None, data: Labelled, alpha: float,
                   miss_cost: float = 1.0, delta: float = DEFAULT_DELTA,
                   how: str = TESTED) -> AutoGuarantee:
    """The auto-decide level at ``alpha`` on ``data`` under ``saved`` (None: the judge's
    probability at face value) with the threshold of ``miss_cost`` (a false alarm costs 1),
    the promise made ``how`` (:data:`TESTED`, or ``SPLIT``: split-certified).

    The level is chosen on out-of-fold calibrated probabilities where the setting calibrates
    (``add_verbal_guarantee``), on the probabilities as they are where it does not (nothing
    is fitted then, so they are out of sample already); an activation setting brings its
    own, chosen out of fold when it was fitted. Refused, with the reason in words, when there
    are too few labelled cases, when the score does not rank cases (the saved setting says
    so, or the AUROC here is below ``MIN_RANKING_AUROC``), and when no level keeps the error
    rate under α on these cases."""
    base = saved or DecisionSetting()
    n = len(data)
    area = auroc(data.probabilities, data.truth) if n else float("nan")

    def refuse(reason: str) -> AutoGuarantee:
        return AutoGuarantee(alpha, miss_cost, None, reason, n, area)

    if base.scorer is not None:
        if how == SPLIT:
            return refuse("This dataset's setting decides from the judge's activations: its "
                          "automatic-decision level is chosen when the scorer is fitted "
                          "(`workbench calibrate --alpha`), tested at ten levels; the "
                          "split-certified guarantee is made here for the judge's words only.")
        return _saved_activation_guarantee(base, alpha, miss_cost)
    violations = sum(data.truth)
    if n < MIN_LABELLED or violations == 0 or violations == n:
        return refuse(f"Auto-decide needs at least {MIN_LABELLED} labelled verdicts with a "
                      f"probability, violations and compliant ones both; this dataset has "
                      f"{plural(n, 'labelled verdict')} ({plural(violations, 'violation')}). "
                      "Label more cases or review more verdicts.")
    if not base.ranks or area < MIN_RANKING_AUROC:
        measured = "" if area != area else (
            f" (on its {n} labelled verdicts it tells violations from compliant ones apart "
            f"{percent(area)} of the time; chance is 50 %, at least {percent(MIN_RANKING_AUROC)} is needed)")
        return refuse("This score does not rank cases here" + measured + ": a confidence "
                      "level would promise nothing, so auto-decide is refused.")
    setting = replace(base, threshold=cost_threshold(miss_cost, 1.0),
                      costs={"miss": float(miss_cost), "false_alarm": 1.0}, auto=None)
    if how == SPLIT:
        setting.auto = split_auto(data.probabilities, data.truth, data.groups, setting.threshold,
                                  alpha, bool(setting.calibration), delta)
        if setting.auto_level is None:
            return AutoGuarantee(alpha, miss_cost, None, (
                f"No level passes the split-certified test at {percent(alpha)} on these "
                f"{n} labelled verdicts: on half the conversations no level kept the wrong "
                f"decisions under {percent(alpha / 2)}, or on the other half too few were "
                "decided automatically, or too many wrongly. Label more cases, or accept a "
                "larger share of errors."), n, area)
        return AutoGuarantee(alpha, miss_cost, setting, None, n, area)
    if setting.calibration:
        add_verbal_guarantee(setting, list(data.probabilities), list(data.truth),
                             list(data.groups), alpha)
    else:
        setting.auto = guarantee_dict(np.array(data.probabilities, dtype=float),
                                      np.array(data.truth, dtype=bool), setting.threshold, alpha,
                                      delta)
    if setting.auto_level is None:
        need = smallest_testable(alpha, delta / len(GRID))
        return AutoGuarantee(alpha, miss_cost, None, (
            f"No confidence level keeps the wrong automatic decisions under {percent(alpha)} on "
            f"these {n} labelled verdicts: a promise at {percent(alpha)} needs at least {need} of "
            "them decided automatically with few errors. Label more cases, or accept a larger "
            "share of errors."), n, area)
    return AutoGuarantee(alpha, miss_cost, setting, None, n, area)


def _saved_activation_guarantee(base: DecisionSetting, alpha: float,
                                miss_cost: float) -> AutoGuarantee:
    """An activation scorer's guarantee is chosen where the scorer is fitted (out of fold,
    ``workbench calibrate --alpha``): the page uses the saved one when it was made for this
    α and these costs, and says how to make one otherwise."""
    cv = base.cross_validated or {}
    n, area = int((base.fitted_on or {}).get("cases", 0)), float(cv.get("auroc", float("nan")))
    auto = base.auto or {}
    same = (auto.get("alpha") == alpha and base.costs.get("miss") == miss_cost
            and base.costs.get("false_alarm") == 1.0)
    if not base.ranks:
        return AutoGuarantee(alpha, miss_cost, None, "This score does not rank cases here: a "
                             "confidence level would promise nothing, so auto-decide is "
                             "refused.", n, area)
    if not same or base.auto_level is None:
        why = ("no level kept the error under α on its labelled cases" if same else
               f"it was saved for α = {percent(auto['alpha'])}" if auto.get("alpha") else
               "it was saved without an error rate")
        return AutoGuarantee(alpha, miss_cost, None, (
            "This dataset's setting decides from the judge's activations; its automatic-decision "
            f"level is chosen when the scorer is fitted, and {why}. Fit it for this choice with "
            f"`workbench calibrate TRACES --cases CASES --alpha {alpha:g} --miss-cost "
            f"{miss_cost:g} --save dataset:NAME`."), n, area)
    return AutoGuarantee(alpha, miss_cost, base, None, n, area)


def guarantee_words(g: AutoGuarantee) -> str:
    """The guarantee in words: coverage, the promise, the bound, the cases it rests on."""
    if g.setting is None or g.setting.auto is None:
        return g.refusal or ""
    a = g.setting.auto
    decided, cases = int(a["decided"]), int(a["cases"])
    if a.get("method") == SPLIT:
        half = int(a["certifying"])
        return (f"Chosen on half the conversations of the {cases} labelled verdicts and "
                f"certified on the other half's {half}: it decides {decided} of those "
                f"{half} ({percent(decided / half)}) automatically; at most {percent(g.alpha)} of "
                f"the automatic decisions wrong, with {percent(1 - float(a['delta']))} "
                f"confidence ({plural(int(a['errors']), 'wrong one')} among them; upper bound "
                f"of the error rate {percent(float(a['bound']), 1)}). A verdict is decided "
                f"automatically when it is at least {percent(float(a['level']))} sure.")
    return (f"On the {cases} labelled verdicts of this dataset it decides {decided} of {cases} "
            f"({percent(decided / cases)}) automatically; at most {percent(g.alpha)} of those wrong, with "
            f"{percent(1 - float(a['delta']))} confidence ({plural(int(a['errors']), 'wrong one')} "
            f"among them; upper bound of the error rate {percent(float(a['bound']), 1)}). A verdict is "
            f"decided automatically when it is at least {percent(float(a['level']))} sure.")


def threshold_words(g: AutoGuarantee, saved: DecisionSetting | None) -> str:
    """What the chosen costs do to the violation line, against the saved setting's."""
    if g.setting is None:
        return ""
    line = g.setting.threshold
    now = saved.threshold if saved is not None else 0.5
    text = (f"With a missed violation costing {g.miss_cost:g} false alarm"
            f"{'' if g.miss_cost == 1 else 's'}, a verdict is a violation from {percent(line)}.")
    if abs(line - now) > 1e-9:
        text += (f" The cards read at the saved {percent(now)}; these automatic decisions follow "
                 "the costs chosen here.")
    return text


def labelled_of(records: Sequence[tuple[str, AuditTrace]], cases: Mapping[str, AuditCase],
                decisions: Sequence[ReviewDecision]) -> Labelled:
    """The labelled verdicts with a probability, as ``store.labelled.labelled_traces`` reads
    them (newest trace per case and configuration; gold labels, a reviewer's word over
    them), from what the page has already read: a key press reads nothing again."""
    traces = latest_per_case([t for _r, t in records], key=trace_key)
    truth = {cid: v for cid, c in cases.items() if (v := label_violation(c.label)) is not None}
    truth = reviewed_truth(truth, decisions, {t.id: t.violation for t in traces})
    scored, _bare = scored_traces(traces, truth)
    return Labelled(tuple(s.probability for s in scored), tuple(s.violation for s in scored),
                    tuple(s.group for s in scored))


@st.cache_data(show_spinner="Choosing the level…", max_entries=32)
def _guarantee(_saved: DecisionSetting | None, _labelled: Callable[[], Labelled], key: tuple,
               alpha: float, miss_cost: float, how: str = TESTED) -> AutoGuarantee:
    return plan_guarantee(_saved, _labelled(), alpha, miss_cost, how=how)


def _apply(eng: Engine, shown: list[QueueItem], reviewer: str, decisions: list[ReviewDecision],
           g: AutoGuarantee) -> None:
    if g.setting is None or g.level is None:
        return
    plan = plan_auto_decisions(shown, g.level, reviewer, g.setting, decisions)
    if plan.decisions and record_decisions(eng, plan.decisions, reviewer, FLASH):
        queue_nav.leave_flash(FLASH, "success", f"Auto-decided {plural(len(plan.decisions), 'verdict')} "
                              "as one action (undo takes them all back).")


def auto_panel(eng: Engine, shown: list[QueueItem], reviewer: str,
               decisions: list[ReviewDecision], saved: tuple[int, DecisionSetting] | None,
               labelled: Callable[[], Labelled], stamp: tuple,
               items: Sequence[QueueItem] = ()) -> None:
    """α and costs, how the promise is made, the guarantee in words, how many more labelled
    cases the promise needs (from the decided records of ``items``, the dataset's queue),
    and the button that applies it (disabled with the reason when refused). ``labelled()``
    gives the dataset's labelled verdicts; it is called only when ``stamp`` (data versions,
    decisions) is new."""
    if not reviewer or not identity.allowed("decide reviews"):
        return
    setting = saved[1] if saved else None
    with st.expander("Auto-decide with a guaranteed error rate"):
        cols = st.columns(2)
        alpha = cols[0].selectbox("Wrong automatic decisions, at most", ALPHAS, index=1,
                                  format_func=lambda a: f"{percent(a)}", key="rv_auto_alpha",
                                  help="α: the largest share of the automatic decisions that may "
                                       "be wrong, promised with 95 % confidence.")
        costs = setting.costs if setting is not None else {"miss": 1.0, "false_alarm": 1.0}
        usual = costs.get("miss", 1.0) / costs.get("false_alarm", 1.0)
        cols[1].selectbox("A missed violation costs", MISS_COSTS,
                          index=MISS_COSTS.index(usual) if usual in MISS_COSTS else 1,
                          format_func=lambda c: f"{c:g} false alarm{'' if c == 1 else 's'}",
                          key="rv_auto_miss")
        miss = float(st.session_state.get("rv_auto_miss", usual))
        how = st.radio("The promise is", list(HOW), format_func=HOW.get, horizontal=True,
                       key="rv_auto_how",
                       help=f"{help_for('guarantee')} {help_for('split-certified guarantee')}")
        g = _guarantee(setting, labelled, (str(eng.url), stamp, saved[0] if saved else None),
                       float(alpha), miss, how)
        n = 0
        if g.setting is None or g.level is None:
            st.warning(g.refusal or "")
        else:
            plan = plan_auto_decisions(shown, g.level, reviewer, g.setting, decisions)
            n = len(plan.decisions)
            st.info(md(guarantee_words(g)))
            st.markdown(md(f"Here it decides {len(plan.decisions)} of {len(shown)} verdicts these "
                           f"filters show ({percent(len(plan.decisions) / len(shown))}) and leaves "
                           f"{len(plan.skipped)} to people. "
                           + threshold_words(g, setting)))
        st.caption(md(forecast_words(_forecast(items, decisions, float(alpha), stamp))),
                   help=help_for("labels needed"))
        queue_nav.show_flash(FLASH)
        st.button(f"Auto-decide {plural(n, 'verdict')}", key="rv_auto_apply",
                  disabled=not n, help=g.refusal or ("Nothing here is sure enough." if not n else None),
                  on_click=_apply, args=(eng, shown, reviewer, decisions, g))


@st.cache_data(show_spinner=False, max_entries=32)
def _forecast(_items: Sequence[QueueItem], _decisions: Sequence[ReviewDecision], alpha: float,
              stamp: tuple):
    """``workbench.review.labelling.queue_forecast``, once per data and decision state."""
    return queue_forecast(list(_items), list(_decisions), alpha)
