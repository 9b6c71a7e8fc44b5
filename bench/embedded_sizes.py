"""Prompt and generation speed of the two embedded models on one prompt, in one sitting.

    .venv/bin/python bench/embedded_sizes.py --default-url http://127.0.0.1:8766 \\
        --small-url http://127.0.0.1:8767 [--prompt-tokens 600] [--answer 64] [--rounds 3]

Each round sends the same request (demo policy text cut to N cl100k tokens and a question,
a fixed answer length, prompt cache off, greedy) to the 1.5B server and then to the 0.5B
server, and reads the servers' own timings (prompt and generated tokens per second). The
servers are given (``workbench model serve [--model small] --port ...``): the figures are
those of servers as the team runs them, and the machine is shared, so compare the two sizes
within one run (the ratio), not across runs. Prints one line per request and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _policy_text(tokens: int) -> str:
    from workbench.llm.tokens import count_tokens, truncate_to_tokens

    sources = sorted((ROOT / "fixtures" / "demo" / "skills").rglob("*.md"))
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sources)
    while count_tokens(text) < tokens:
        text = text + "\n\n" + text
    return truncate_to_tokens(text, tokens)


def _ask(url: str, text: str, answer: int) -> dict:
    body = {
        "model": "x",
        "messages": [
            {"role": "system", "content": "You are a compliance judge. Explain your reasoning."},
            {"role": "user", "content": text + "\n\nSummarise the refund rules above in detail."},
        ],
        "max_tokens": answer,
        "temperature": 0,
        "cache_prompt": False,
        "ignore_eos": True,  # every request generates exactly `answer` tokens
    }
    req = urllib.request.Request(f"{url.rstrip('/').removesuffix('/v1')}/v1/chat/completions",
                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=900) as resp:
        data = json.loads(resp.read())
    t = data["timings"]
    return {"model": data.get("model"), "prompt_n": t["prompt_n"], "prompt_tps": t["prompt_per_second"],
            "gen_n": t["predicted_n"], "gen_tps": t["predicted_per_second"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--default-url", required=True, help="a `workbench model serve` of the 1.5B")
    ap.add_argument("--small-url", required=True, help="a `workbench model serve --model small`")
    ap.add_argument("--prompt-tokens", type=int, default=600)
    ap.add_argument("--answer", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    text = _policy_text(args.prompt_tokens)
    rows: dict[str, list[dict]] = {"default": [], "small": []}
    for r in range(args.rounds):
        for name, url in (("default", args.default_url), ("small", args.small_url)):
            row = _ask(url, text, args.answer)
            rows[name].append(row)
            print(f"round {r + 1} {name:<7} {row['model']}: prompt {row['prompt_n']} tok "
                  f"{row['prompt_tps']:.1f} tok/s, generated {row['gen_n']} tok {row['gen_tps']:.1f} tok/s",
                  flush=True)
    med = {name: {k: statistics.median(x[k] for x in got) for k in ("prompt_tps", "gen_tps")}
           for name, got in rows.items()}
    for name, m in med.items():
        print(f"median {name:<7} prompt {m['prompt_tps']:.1f} tok/s, generation {m['gen_tps']:.1f} tok/s")
    print(f"small / default: prompt x{med['small']['prompt_tps'] / med['default']['prompt_tps']:.2f}, "
          f"generation x{med['small']['gen_tps'] / med['default']['gen_tps']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
