"""Write a label-balanced, session-spread sample of audit cases, for judge runs whose cost
allows only a few dozen cases (the embedded model on CPU).

``n/2`` violation and ``n/2`` compliant cases, drawn with a fixed seed; within each label
the sessions are visited round-robin in a seeded order, so no conversation supplies a second
case before every conversation with that label has supplied one. The same seed and cases
file always give the same sample; the ids are printed so a report can state the sample.

``--skills N`` draws the sample from the N SKILLs with the most violation cases instead
(``n/N`` cases each, half of each label) and writes it ordered by SKILL and conversation:
a RawSkill prompt starts with the whole SKILL document, so consecutive cases of one SKILL let a
server with prompt caching (llama.cpp, vLLM, SGLang) reuse that prefix instead of reading
~10K tokens again for every case. It trades breadth over SKILLs for a run that fits in hours.

Run: ``python bench/balanced_sample.py --cases cb/cases.jsonl --n 40 [--skills 5] --out sample.jsonl``
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import AuditCase, dump_cases, load_cases  # noqa: E402


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


def skill_grouped_sample(cases: list[AuditCase], n: int, skills: int, seed: int) -> list[AuditCase]:
    if n % (2 * skills):
        raise SystemExit(f"--n {n} must be a multiple of 2 x --skills ({2 * skills})")
    first = {c.id: (c.skills or ["?"])[0] for c in cases}
    violations: dict[str, int] = defaultdict(int)
    for case in cases:
        violations[first[case.id]] += case.label == "negative"
    chosen = sorted(violations, key=lambda s: (-violations[s], s))[:skills]
    picked = [case for skill in chosen
              for case in balanced_sample([c for c in cases if first[c.id] == skill], n // skills, seed)]
    return sorted(picked, key=lambda c: (first[c.id], c.session, c.id))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", required=True)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--skills", type=int, default=0,
                        help="draw from the N SKILLs with the most violation cases, ordered by SKILL")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cases = load_cases(args.cases)
    if args.skills:
        sample = skill_grouped_sample(cases, args.n, args.skills, args.seed)
    else:
        sample = balanced_sample(cases, args.n, args.seed)
    dump_cases(sample, args.out)
    sessions = len({c.session for c in sample})
    print(f"{len(sample)} cases ({sum(c.label == 'negative' for c in sample)} violation, "
          f"{sum(c.label == 'positive' for c in sample)} compliant) from {sessions} conversations, "
          f"seed {args.seed}: {args.out}")
    print(" ".join(c.id for c in sample))


if __name__ == "__main__":
    main()
