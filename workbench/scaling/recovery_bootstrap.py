"""How sure a Recovery figure is: conversation-bootstrap intervals from per-case verdicts.

Recovery divides two F1 differences measured on a few dozen held-out cases, so its point
value alone says little (the real 1.5B -> 0.5B runs on 30 cases gave 0.51 and 0.71 with
intervals about a unit wide). Cases of one conversation share a policy and a customer, so
they are resampled together: each draw picks conversations with replacement and recomputes
every judge's F1 on the cases of the picked conversations. Draws where the teacher's F1
equals the base's (Recovery undefined) are skipped and counted.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CaseVerdict:
    """One judge on one labelled case: the gold label and what the judge said."""

    case: str
    session: str  # the conversation; cases of one are resampled together
    violation: bool  # gold: the reply broke a rule
    said: bool | None  # the verdict; None = no verdict (left out of F1, as audit metrics does)


def violation_f1(verdicts: Iterable[CaseVerdict]) -> float:
    """2TP / (2TP + FP + FN) over judged cases; NaN when there is nothing to find or flag."""
    tp = fp = fn = 0
    for v in verdicts:
        if v.said is None:
            continue
        tp += v.said and v.violation
        fp += v.said and not v.violation
        fn += (not v.said) and v.violation
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")


def _interval(values: list[float]) -> list[float] | None:
    values = sorted(v for v in values if v == v)  # NaN: no violation in the draw
    if not values:
        return None
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[int(round(0.975 * (len(values) - 1)))]
    return [round(lo, 4), round(hi, 4)]


def recovery_intervals(judges: Mapping[str, list[CaseVerdict]], *, draws: int = 2000,
                       seed: int = 0) -> dict:
    """95 % percentile intervals of each judge's F1, each distilled judge's Recovery and, with
    both students, of F1(headroom) - F1(uniform). ``judges`` maps base, teacher and the
    distilled names to their verdicts on the same cases (checked)."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    cases = {name: {v.case: v for v in verdicts} for name, verdicts in judges.items()}
    first = next(iter(cases.values()))
    for name, by_case in cases.items():
        if by_case.keys() != first.keys():
            raise ValueError(f"the {name} verdicts cover other cases than the rest: "
                             "bootstrap needs every judge on the same cases")
    sessions: dict[str, list[str]] = {}
    for cid, v in sorted(first.items()):
        sessions.setdefault(v.session or cid, []).append(cid)
    names = sorted(sessions)
    distilled = [n for n in judges if n not in ("base", "teacher")]
    rng = random.Random(seed)
    f1s: dict[str, list[float]] = {n: [] for n in judges}
    recoveries: dict[str, list[float]] = {n: [] for n in distilled}
    gaps: list[float] = []
    skipped = 0
    for _ in range(draws):
        picked = [cid for _ in names for cid in sessions[rng.choice(names)]]
        f1 = {n: violation_f1(cases[n][cid] for cid in picked) for n in judges}
        for n, value in f1.items():
            f1s[n].append(value)
        if {"uniform", "headroom"} <= f1.keys():
            gaps.append(f1["headroom"] - f1["uniform"])
        gain = f1["teacher"] - f1["base"]
        if not gain or gain != gain:
            skipped += 1
            continue
        for n in distilled:
            recoveries[n].append((f1[n] - f1["base"]) / gain)
    return {
        "draws": draws, "seed": seed, "skipped": skipped, "cases": len(first),
        "conversations": len(names),
        "f1": {n: _interval(v) for n, v in f1s.items()},
        "recovery": {n: _interval(v) for n, v in recoveries.items()},
        "headroom_minus_uniform_f1": _interval(gaps) if gaps else None,
    }
