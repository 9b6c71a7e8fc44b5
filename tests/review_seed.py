"""A labelled dataset whose judge probabilities rank cases well, for Review's guaranteed
error rate (page and browser tests): 120 cases, one conversation each, 108 judged
confidently right (half of them violations) and twelve doubtful ones near the line. No model
runs."""

from __future__ import annotations

from workbench.audit import AuditTrace, Verdict
from workbench.audit.cases import AuditCase
from workbench.identity.roles import COMMAND_LINE

DATASET = "syn"
CONFIDENT = 108
# case number -> (the judge's probability, truly a violation?): twelve near the line, eight
# of them decided wrongly under a threshold of 2/3 (all below it: compliant). The least
# confident first: 0.62 (decided compliant, 38 % sure; the judge said violation and the gold
# label is violation). So many errors near the line keep them from automatic decisions.
DOUBTFUL = {108 + i: (p, t) for i, (p, t) in enumerate([
    (0.62, True), (0.60, True), (0.58, False), (0.56, True), (0.54, True), (0.52, False),
    (0.50, True), (0.48, True), (0.46, False), (0.44, True), (0.42, True), (0.40, False)])}
MOST_DOUBTFUL = "syn-108"
REPLY = "We have refunded your order in full."


def probability(n: int) -> tuple[float, bool]:
    if n in DOUBTFUL:
        return DOUBTFUL[n]
    violation = n % 2 == 0
    step = (n // 2) / (CONFIDENT // 2)  # 0 .. 1
    return (0.70 + 0.29 * step if violation else 0.01 + 0.28 * step), violation


def seed_labelled(eng, dataset: str = DATASET, run: str = "run-1") -> None:
    """Store the cases and one cdg trace of each (the judge: violation from 0.5)."""
    from store import audit_repo

    cases, traces = [], []
    for n in range(CONFIDENT + len(DOUBTFUL)):
        p, violation = probability(n)
        cid = f"syn-{n:03d}"
        cases.append(AuditCase(cid, REPLY, session=f"conv-{n}",
                               label="negative" if violation else "positive",
                               context=f"user: where is my refund for order {n}?"))
        traces.append(AuditTrace(id=cid, strategy="cdg", session=f"conv-{n}",
                                 verdict=Verdict(p >= 0.5, f"hand-set at {p:.2f}",
                                                 ["R1"] if p >= 0.5 else [],
                                                 probability=p, probability_source="logprobs",
                                                 evidence=[{"start": 8, "end": 36,
                                                            "quote": REPLY[8:36]}])))
    audit_repo.save_cases(eng, dataset, cases, actor=COMMAND_LINE)
    audit_repo.save_traces(eng, traces, run, dataset, actor=COMMAND_LINE)


def save_setting(eng, dataset: str = DATASET, **changes) -> None:
    """Save the dataset's decision setting: by default a violation from 2/3 (a missed
    violation costs half a false alarm), uncalibrated."""
    from store.thresholds import save_threshold, scope_name
    from workbench.decision import DecisionSetting, cost_threshold

    fields = {"threshold": cost_threshold(0.5, 1.0), "costs": {"miss": 0.5, "false_alarm": 1.0},
              **changes}
    save_threshold(eng, scope_name("dataset", dataset), DecisionSetting(**fields),
                   base_version=None, actor=COMMAND_LINE)
