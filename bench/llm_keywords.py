"""``--keywords llm`` against lexical keywords: cdg gold coverage on a seeded sample of
CompliBench turns, with the configured keyworder (the embedded model by default).

Needs an index and cases from ``workbench import-complibench ... --long``. The model is slow
on CPU (about 35 s a case on 2 busy cores), so the sample is small; point
``WORKBENCH_EMBEDDED_URL`` at a running ``workbench model serve`` to share one server.

Run: ``python bench/llm_keywords.py --index cb/index.json --cases cb/cases.jsonl [--n 10]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import AuditIndex, AuditOptions, audit_case, load_cases  # noqa: E402
from workbench.evaluate.coverage_curve import covers  # noqa: E402
from workbench.graph import PolicyIndex  # noqa: E402
from workbench.llm import Gateway  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    index = AuditIndex(PolicyIndex.load(args.index))
    cases = [c for c in load_cases(args.cases) if c.gold_rules]
    sample = random.Random(args.seed).sample(cases, min(args.n, len(cases)))
    gateway = Gateway.from_env()
    rows = []
    for case in sample:
        t0 = time.time()
        lexical = audit_case(case, index, "cdg", None, AuditOptions(judge_mode="none"))
        llm = audit_case(case, index, "cdg", gateway, AuditOptions(judge_mode="none", keywords="llm"))
        row = {"id": case.id, "lexical": covers(lexical, case, index), "llm": covers(llm, case, index),
               "llm_keywords": llm.keywords, "error": llm.error.kind if llm.error else None,
               "prompt_tokens": sum(u.prompt_tokens for u in llm.usage),
               "seconds": round(time.time() - t0, 1)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    n = len(rows)
    print(f"{n} cases: cdg coverage lexical {sum(r['lexical'] for r in rows) / n:.2f}, "
          f"llm {sum(r['llm'] for r in rows) / n:.2f}; {sum(r['seconds'] for r in rows):.0f} s, "
          f"{sum(r['prompt_tokens'] for r in rows) / n:.0f} keyword prompt tokens a case")


if __name__ == "__main__":
    main()
