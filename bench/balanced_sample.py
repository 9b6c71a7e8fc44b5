"""Write a label-balanced, session-spread sample of audit cases, for judge runs whose cost
allows only a few dozen cases (the embedded model on CPU).

``n/2`` violation and ``n/2`` compliant cases, drawn with a fixed seed; within each label
the sessions are visited round-robin in a seeded order, so no conversation supplies a second
case before every conversation with that label has supplied one. The same seed and cases
file always give the same sample; the ids are printed so a report can state the sample.

Run: ``python bench/balanced_sample.py --cases cb/cases.jsonl --n 40 --out sample.jsonl``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import AuditCase, load_cases  # noqa: E402


def balanced_sample(cases: list[AuditCase], n: int, seed: int) -> list[AuditCase]:
    rng = random.Random(seed)
    picked: list[AuditCase] = []
    for label in ("negative", "positive"):
        by_session: dict[str, list[AuditCase]] = defaultdict(list)
        for case in cases:
            if case.label == label:
                by_session[case.session or case.id].append(case)
        sessions = sorted(by_session)
        rng.shuffle(sessions)
        for key in sessions:
            rng.shuffle(by_session[key])
        want = n // 2
        have = sum(len(v) for v in by_session.values())
        if have < want:
            raise SystemExit(f"only {have} cases labelled {label!r}; ask for --n {2 * have} or fewer")
        taken: list[AuditCase] = []
        while len(taken) < want:
            for key in sessions:
                if by_session[key] and len(taken) < want:
                    taken.append(by_session[key].pop())
        picked.extend(taken)
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", required=True)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sample = balanced_sample(load_cases(args.cases), args.n, args.seed)

    with open(args.out, "w", encoding="utf-8") as fh:
        for case in sample:
            fh.write(json.dumps(case.to_dict(), ensure_ascii=False) + "\n")
    sessions = len({c.session for c in sample})
    print(f"{len(sample)} cases ({sum(c.label == 'negative' for c in sample)} violation, "
          f"{sum(c.label == 'positive' for c in sample)} compliant) from {sessions} conversations, "
          f"seed {args.seed}: {args.out}")
    print(" ".join(c.id for c in sample))


if __name__ == "__main__":
    main()
