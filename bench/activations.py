"""What the judge's activations cost, on this machine, in one run (issue 57).

    .venv/bin/python bench/activations.py --traces run.jsonl --cases cases.jsonl [--n 4]
        [--with-transformers] [--prefix-cases sample.jsonl --index index.json]

For each of the first N traces with a context, in turn (so a drift in the machine's load
falls on every mode alike), with the embedded llama.cpp judge, response cache off and the
server's slots emptied before each call:

  (a) the judge's call as the audit makes it (whole mode, the verdict schema,
      log-probabilities): what an audit without activations costs;
  (b) the same call in one pass (``workbench.llm.onepass``): the prompt read in this process,
      its layers kept, its KV cache handed to the server, which only generates;
  (c) the prompt read alone (``--score-only``): what scoring a case costs;
  (d) with ``--with-transformers``: the previous capture (the GGUF dequantised into
      transformers, a second forward pass), read after (a) as an audit plus
      ``features capture`` did.

Prints seconds per case of each, the ratio (b)/(a) (goal <= 1.15), cases per hour of (a),
(b) and (c) and, with (d), (a)+(d) over (a). With ``--prefix-cases`` it also measures how
much of a judging prompt the previous case's prompt of the same conversation shares
(tokenised only, no model call): llama.cpp reuses a slot's cache only for a common prefix.
Run it alone: every mode uses every core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import load_cases  # noqa: E402
from workbench.audit.judge import VERDICT_SCHEMA, judge_messages  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402


def _erase_slots(url: str, slots: int) -> None:
    for i in range(slots):
        req = urllib.request.Request(f"{url}/slots/{i}?action=erase", data=b"{}",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()


def _judge(gateway, msgs, step: str) -> float:
    start = time.perf_counter()
    gateway.complete_json(role="judge", messages=msgs, schema=VERDICT_SCHEMA,
                          schema_name="verdict", step=step, use_cache=False, logprobs=10)
    return time.perf_counter() - start


def prefix_sharing(cases_path: Path, index_path: Path, limit: int) -> dict:
    """How many tokens a judging prompt shares with the previous prompt of its conversation."""
    from workbench.audit.pipeline import AuditOptions
    from workbench.audit.policy import AuditIndex
    from workbench.audit.runner import audit_one
    from workbench.audit.strategies import get_strategy
    from workbench.graph import PolicyIndex
    from workbench.llm.onepass import chatml
    from workbench.llm.tokens import count_tokens
    from workbench.vocabulary import JudgeMode

    index = AuditIndex(PolicyIndex.from_dict(json.loads(index_path.read_text())))
    cases = sorted(load_cases(cases_path)[:limit], key=lambda c: (c.session or c.id, c.id))
    strat = get_strategy("cdg", None)
    opts = AuditOptions(judge_mode=JudgeMode.NONE, time_limit_s=0)
    last: dict[str, str] = {}
    shares = []
    for case in cases:
        trace = audit_one(case, index, strat, None, opts)
        if not trace.context:
            continue
        prompt = chatml(judge_messages(case, trace.context))
        prev = last.get(case.session or case.id)
        if prev is not None:
            common = 0
            for a, b in zip(prev, prompt, strict=False):
                if a != b:
                    break
                common += 1
            shares.append(count_tokens(prompt[:common]) / max(1, count_tokens(prompt)))
        last[case.session or case.id] = prompt
    return {"pairs": len(shares), "mean_shared": statistics.mean(shares) if shares else None,
            "max_shared": max(shares) if shares else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--cases", required=True, type=Path)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--with-transformers", action="store_true")
    ap.add_argument("--prefix-cases", type=Path, default=None)
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()

    from workbench.llm import Gateway
    from workbench.llm.embedded import current_embedded_server
    from workbench.llm.onepass import OnePass

    cases = {c.id: c for c in load_cases(args.cases)}
    traces = [t for t in read_traces(args.traces)[0] if t.context and t.id in cases][: args.n]
    prompts = [judge_messages(cases[t.id], t.context) for t in traces]
    gateway = Gateway.from_env()
    t0 = time.perf_counter()
    gateway.complete_json(role="judge", messages=[{"role": "user", "content": "Say {}"}],
                          schema={"type": "object"}, step="warm-up", use_cache=False)
    server = current_embedded_server()
    print(f"judge server up and warm in {time.perf_counter() - t0:.0f} s")
    onepass = OnePass("embedded", slots=server.info.slots)
    t0 = time.perf_counter()
    reader = onepass.reader()
    print(f"llama.cpp reader loaded in {time.perf_counter() - t0:.1f} s (once per process)")
    old = None
    if args.with_transformers:
        from workbench.llm.activations import ActivationReader

        t0 = time.perf_counter()
        old = ActivationReader("embedded")
        print(f"transformers reader loaded in {time.perf_counter() - t0:.0f} s")
    rows = []
    for t, msgs in zip(traces, prompts, strict=True):
        _erase_slots(server.url, server.info.slots)
        a = _judge(gateway, msgs, "bench")
        _erase_slots(server.url, server.info.slots)
        gateway.onepass = onepass
        b = _judge(gateway, msgs, f"judge:{t.id}:bench")
        gateway.onepass = None
        got = reader.read(msgs)
        c = got.seconds
        d = old.capture(msgs).seconds if old is not None else None
        rows.append({"case": t.id, "prompt_tokens": got.prompt_tokens, "judge_s": a,
                     "one_pass_s": b, "read_only_s": c, "transformers_s": d})
        extra = f", transformers read {d:.1f} s" if d is not None else ""
        print(f"{t.id} ({got.prompt_tokens} tokens): judge {a:.1f} s, one pass {b:.1f} s, "
              f"read only {c:.1f} s{extra}", flush=True)
    a = sum(r["judge_s"] for r in rows)
    b = sum(r["one_pass_s"] for r in rows)
    c = sum(r["read_only_s"] for r in rows)
    out = {"cases": len(rows), "rows": rows, "one_pass_over_judge": b / a,
           "cases_per_hour": {"judged": 3600 * len(rows) / a, "judged_one_pass": 3600 * len(rows) / b,
                              "score_only": 3600 * len(rows) / c},
           "restored": onepass.restored, "fallbacks": onepass.fallbacks}
    if old is not None:
        out["two_pass_over_judge"] = (a + sum(r["transformers_s"] for r in rows)) / a
    print(f"one pass / judge alone: {out['one_pass_over_judge']:.3f} (goal <= 1.15); "
          f"prompts handed to the server: {onepass.restored}, read again: {onepass.fallbacks}")
    if old is not None:
        print(f"two passes (judge, then transformers) / judge alone: {out['two_pass_over_judge']:.3f}")
    cph = out["cases_per_hour"]
    print(f"cases per hour: judged {cph['judged']:.0f}, judged in one pass "
          f"{cph['judged_one_pass']:.0f}, score only {cph['score_only']:.0f}")
    if args.prefix_cases and args.index:
        out["prefix"] = prefix_sharing(args.prefix_cases, args.index, 400)
        p = out["prefix"]
        print(f"prefix shared with the previous prompt of the conversation: mean "
              f"{p['mean_shared']:.1%}, max {p['max_shared']:.1%} over {p['pairs']} pairs")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
