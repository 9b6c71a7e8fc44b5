"""Memory and prompt speed of the embedded server at several slot sizes.

    .venv/bin/python bench/embedded_context.py [--slots 4096,8192,16384] [--prompts 3000,11000]

For each slot size (tokens per request; the server gets ``2 x slot`` over 2 slots, as the
default configuration) a fresh child process starts the embedded llama.cpp server and
reports its resident memory after start-up, then sends each prompt that fits the slot
(policy text from the demo SKILLs, cut to N cl100k tokens, answer of 1 token, prompt cache
off) and reports the server's own prompt count and prompt speed, and the peak memory.
A child per size keeps the memory figures apart (a stopped server's pages are not always
given back to the OS). Figures are from one run on this machine, which other processes
share: compare sizes within one run, not across machines.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ANSWER_ROOM = 600  # tokens a judge prompt leaves for the answer and chat markup


def _rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _policy_text(tokens: int) -> str:
    from workbench.llm.tokens import count_tokens, truncate_to_tokens

    sources = sorted((ROOT / "fixtures" / "demo" / "skills").rglob("*.md"))
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sources)
    while count_tokens(text) < tokens:  # the demo SKILLs are ~20K tokens; repeat if asked for more
        text = text + "\n\n" + text
    return truncate_to_tokens(text, tokens)


def _prompt(url: str, tokens: int) -> dict:
    body = {
        "model": "x",
        "messages": [
            {"role": "system", "content": "Answer with one word."},
            {"role": "user", "content": _policy_text(tokens) + "\n\nIs this a policy?"},
        ],
        "max_tokens": 1,
        "temperature": 0,
        "cache_prompt": False,
    }
    req = urllib.request.Request(
        f"{url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=1800) as resp:
        data = json.loads(resp.read())
    wall = time.perf_counter() - t0
    timings = data.get("timings") or {}
    return {
        "cl100k_tokens": tokens,
        "model_prompt_tokens": int(timings.get("prompt_n") or data["usage"]["prompt_tokens"]),
        "prompt_tok_s": round(float(timings.get("prompt_per_second") or 0.0), 1),
        "wall_s": round(wall, 1),
    }


def child(slot: int, prompts: list[int]) -> dict:
    from workbench.llm.config import EmbeddedConfig
    from workbench.llm.embedded import EmbeddedServer

    before = _rss_mb()
    server = EmbeddedServer(EmbeddedConfig(ctx_size=2 * slot, parallel=2))
    info = server.start()
    started = _rss_mb()
    runs = [_prompt(info.url, n) for n in prompts if n + ANSWER_ROOM <= slot]
    out = {
        "slot": info.slot_ctx,
        "ctx_size": 2 * slot,
        "threads": info.threads,
        "rss_before_mb": round(before),
        "rss_started_mb": round(started),
        "rss_peak_mb": round(_rss_mb("VmHWM")),
        "startup_s": round(info.startup_s, 1),
        "prompts": runs,
    }
    server.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", default="4096,8192,16384")
    ap.add_argument("--prompts", default="3000,11000", help="prompt sizes in cl100k tokens")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    prompts = [int(x) for x in args.prompts.split(",") if x.strip()]
    if args.child is not None:
        print(json.dumps(child(args.child, prompts)), flush=True)
        return
    for slot in (int(x) for x in args.slots.split(",")):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(slot), "--prompts", args.prompts],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            print(f"slot {slot}: failed\n{proc.stderr[-2000:]}", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"slot {r['slot']:>6} (ctx_size {r['ctx_size']}, {r['threads']} threads): RSS "
            f"{r['rss_started_mb']} MB after start ({r['rss_before_mb']} before), peak "
            f"{r['rss_peak_mb']} MB; start {r['startup_s']} s",
            flush=True,
        )
        for p in r["prompts"]:
            print(
                f"    prompt {p['cl100k_tokens']} cl100k = {p['model_prompt_tokens']} model tokens: "
                f"{p['prompt_tok_s']} tok/s, {p['wall_s']} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
