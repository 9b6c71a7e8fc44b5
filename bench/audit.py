"""Online audit speed, everything except model calls, on a 3,467-rule SKILL.

The SKILL is synthetic but shaped like the largest enterprise policy in the SkillCDG paper
(3,467 rules, 1,737 require edges): ~350 sections of ten rules, each rule one sentence of
policy-like words with its verbatim span. Each case is a reply that paraphrases one or two
random rules. Per case we time ``audit_case(..., judge_mode="none")`` (lexical keywords,
routing, seeds, closure, rendering and token counting) for ``cdg``, and the same call for
the ``bm25`` and ``dense`` baselines (dense includes embedding the query on CPU, which is
its own small model call). One-off preparation (word indexes, BM25 index, passage
embeddings) is timed separately. Goal: cdg median < 5 ms.

cdg is timed twice: with its default token target (1,600 tokens) and with ``seed_target``
matched to bm25's mean context (the like-for-like figure the goal is judged on: rendering
and counting tokens grow with the context, whatever the method).

Run: ``python bench/audit.py [--cases 300]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit.cases import AuditCase, Turn  # noqa: E402
from workbench.audit.pipeline import AuditOptions, audit_case  # noqa: E402
from workbench.audit.policy import AuditIndex  # noqa: E402
from workbench.audit.strategies import get_strategy  # noqa: E402
from workbench.graph import Edge, PolicyIndex, Rule, RuleGraph, SkillGraph, Span  # noqa: E402

N_RULES, N_EDGES = 3467, 1737
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "ga", "fe", "zu", "ri", "bo"]
COMMON = ["order", "refund", "customer", "account", "payment", "delivery", "agent", "request",
          "item", "return", "credit", "fee", "policy", "days", "transfer", "verify"]


def make_skill(seed: int = 7) -> tuple[SkillGraph, list[tuple[str, str]]]:
    rnd = random.Random(seed)
    vocab = sorted({"".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(2, 4))) for _ in range(6000)})

    def phrase(n: int) -> str:
        return " ".join(rnd.choice(COMMON) if rnd.random() < 0.3 else rnd.choice(vocab) for _ in range(n))

    parts = ["---\nname: enterprise\ndescription: A very long synthetic enterprise policy.\n---\n\n"]
    size = len(parts[0])
    rules, sentences = [], []
    for i in range(N_RULES):
        if i % 10 == 0:
            head = f"## Section {i // 10 + 1}\n\n"
            parts.append(head)
            size += len(head)
        cond, action = phrase(6), phrase(7)
        sentence = f"When {cond}, the agent must {action}."
        rules.append(Rule(f"R{i:04d}", cond, action, "required", (Span(size, size + len(sentence)),)))
        sentences.append((cond, action))
        parts.append(sentence + "\n\n")
        size += len(sentence) + 2
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < N_EDGES:
        a, b = rnd.randrange(N_RULES), rnd.randrange(N_RULES)
        if a != b:
            pairs.add((rules[max(a, b)].id, rules[min(a, b)].id))
    graph = RuleGraph(rules, [Edge(a, b) for a, b in sorted(pairs)])
    skill = SkillGraph("enterprise", "A very long synthetic enterprise policy.", "".join(parts), graph)
    return skill, sentences


def make_cases(sentences, n: int, seed: int = 11) -> list[AuditCase]:
    rnd = random.Random(seed)
    cases = []
    for i in range(n):
        picked = rnd.sample(sentences, rnd.randint(1, 2))
        reply = " ".join(f"Since {c.split()[0]} {c.split()[1]}, I will {a}." for c, a in picked)
        cases.append(AuditCase(f"case-{i}", reply, skills=["enterprise"],
                               context=[Turn("user", f"Please help with my {rnd.choice(COMMON)}.")]))
    return cases


def time_strategy(name: str, cases, index: AuditIndex, target: int | None = None
                  ) -> tuple[list[float], float, float]:
    strat = get_strategy(name)
    opts = AuditOptions(judge_mode="none").with_context(seed_target=target)
    t0 = time.perf_counter()
    audit_case(cases[0], index, strat, None, opts)  # warm-up: builds BM25 / embeds passages
    prep = (time.perf_counter() - t0) * 1000
    samples, errors, units, tokens = [], 0, [], []
    for case in cases:
        t = audit_case(case, index, strat, None, opts)
        errors += t.error is not None
        samples.append(t.timings_ms["total"])
        units.append(len(t.units))
        tokens.append(t.context_tokens)
    if errors:
        print(f"  note: {errors} {name} cases ended without a context (EmptySeed)")
    print(f"  {name}: mean {statistics.mean(units):.1f} context items, "
          f"{statistics.mean(tokens):.0f} context tokens")
    return samples, prep, statistics.mean(tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--no-dense", action="store_true", help="skip the dense baseline")
    args = parser.parse_args()
    skill, sentences = make_skill()
    t0 = time.perf_counter()
    index = AuditIndex(PolicyIndex([skill]))
    build_ms = (time.perf_counter() - t0) * 1000
    cases = make_cases(sentences, args.cases)
    print(f"SKILL: {len(skill.graph)} rules, {len(skill.graph.edges)} edges; {len(cases)} cases")
    print(f"AuditIndex build (once per policy): {build_ms:.0f} ms")
    names = ["bm25", "cdg"] + ([] if args.no_dense else ["dense"])
    medians, mean_tokens = {}, {}
    runs = [(n, n, None) for n in names]
    runs.insert(2, ("cdg@bm25", "cdg", "bm25"))
    for label, name, match in runs:
        target = int(mean_tokens[match]) if match else None
        samples, prep, mean_tokens[label] = time_strategy(name, cases, index, target)
        medians[label] = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        print(f"{label:>8}: median {medians[label]:.2f} ms/case, p90 {p90:.2f} ms "
              f"(first case incl. one-off preparation: {prep:.0f} ms)")
    goal = "met" if medians["cdg@bm25"] < 5 else "NOT met"
    print(f"goal cdg median < 5 ms (context matched to bm25's tokens): {goal}")
    for name in names:
        if name != "cdg":
            print(f"ratio {name}/cdg@bm25: {medians[name] / medians['cdg@bm25']:.2f}")


if __name__ == "__main__":
    main()
