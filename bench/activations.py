"""Cost of a case with and without the judge's activations, on this machine, in one run.

    .venv/bin/python bench/activations.py --traces run.jsonl --cases cases.jsonl [--n 3]

For each of the first N traces with a context: (a) the judge's call as the audit makes it
(whole mode, the verdict schema, log-probabilities; the embedded llama.cpp server, response
cache off) and (b) reading the judge's activations for the same prompt
(``workbench.llm.activations``: the same GGUF through transformers, one forward pass). Prints
seconds per case for each and the ratio (b)/(a): what capturing adds to a judged case, and
what a decision from activations alone costs against a judged one. Run it alone: both use
every core.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import load_cases  # noqa: E402
from workbench.audit.judge import VERDICT_SCHEMA, judge_messages  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--cases", required=True, type=Path)
    ap.add_argument("--n", type=int, default=3)
    args = ap.parse_args()

    from workbench.llm import Gateway
    from workbench.llm.activations import ActivationReader

    cases = {c.id: c for c in load_cases(args.cases)}
    traces = [t for t in read_traces(args.traces)[0] if t.context and t.id in cases][: args.n]
    prompts = [judge_messages(cases[t.id], t.context) for t in traces]
    gateway = Gateway.from_env()
    t0 = time.perf_counter()
    gateway.complete_json(role="judge", messages=[{"role": "user", "content": "Say {}"}],
                          schema={"type": "object"}, step="warm-up", use_cache=False)
    print(f"judge server up and warm in {time.perf_counter() - t0:.0f} s")
    judge_s = []
    for t, msgs in zip(traces, prompts, strict=True):
        start = time.perf_counter()
        gateway.complete_json(role="judge", messages=msgs, schema=VERDICT_SCHEMA,
                              schema_name="verdict", step="bench", use_cache=False, logprobs=5)
        judge_s.append(time.perf_counter() - start)
        print(f"{t.id}: judge call {judge_s[-1]:.1f} s")
    t0 = time.perf_counter()
    reader = ActivationReader("embedded")
    print(f"activation reader loaded in {time.perf_counter() - t0:.0f} s (once per process)")
    read_s, tokens = [], []
    for t, msgs in zip(traces, prompts, strict=True):
        got = reader.capture(msgs)
        read_s.append(got.seconds)
        tokens.append(got.prompt_tokens)
        print(f"{t.id}: activations {got.seconds:.1f} s ({got.prompt_tokens} prompt tokens)")
    j, r = statistics.median(judge_s), statistics.median(read_s)
    print(f"median over {len(traces)} cases ({statistics.median(tokens):.0f} prompt tokens): "
          f"judge call {j:.1f} s, activations {r:.1f} s; judged + activations = {(j + r) / j:.2f}x "
          f"a judged case; activations alone = {r / j:.2f}x")


if __name__ == "__main__":
    main()
