"""Gateway throughput against the embedded model, and the cache-hit path, as ratios.

    .venv/bin/python bench/gateway.py [--n 1,2,4] [--rounds 1] [--max-tokens 16]

For each N it sends N small structured requests at once (distinct prompts, cache off) and
reports requests/s relative to N=1; then it times answers served from the response cache
(memory and SQLite) relative to one live call. Figures are from one run on this machine,
so compare the ratios, not the absolute numbers, across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.llm import Gateway, MemoryResponseCache, load_config  # noqa: E402
from workbench.llm.embedded import ensure_embedded_server  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"modality": {"type": "string", "enum": ["required", "prohibited", "permitted"]}},
    "required": ["modality"],
    "additionalProperties": False,
}
SENTENCES = [
    "Verify the customer's identity before discussing an order.",
    "Never refund to a different payment method.",
    "An order may be cancelled only while its status is pending.",
    "Agents must not share internal notes with customers.",
    "Offer a callback when the queue is longer than ten minutes.",
    "Escalate threats of legal action to a supervisor.",
    "Do not promise delivery dates for backordered items.",
    "Customers may change the shipping address before dispatch.",
]


def messages(i: int) -> list[dict]:
    return [
        {"role": "system", "content": "Classify the modality of the policy sentence."},
        {"role": "user", "content": SENTENCES[i % len(SENTENCES)] + f" (#{i})"},
    ]


async def burst(gw: Gateway, n: int, offset: int) -> tuple[float, int]:
    started = time.perf_counter()
    results = await asyncio.gather(
        *[
            gw.acomplete_json("judge", messages(offset + i), SCHEMA, "modality", "bench", use_cache=False)
            for i in range(n)
        ]
    )
    return time.perf_counter() - started, sum(r.usage.completion_tokens for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1,2,4", help="concurrency levels (comma-separated)")
    parser.add_argument("--rounds", type=int, default=1, help="bursts per level (median)")
    parser.add_argument("--max-tokens", type=int, default=32)  # JSON needs ~12-20
    parser.add_argument("--cache-hits", type=int, default=200)
    args = parser.parse_args()
    levels = [int(x) for x in args.n.split(",")]

    base = load_config()
    config = base.with_role(
        "judge",
        model="embedded",
        concurrency=max(levels),
        max_tokens=args.max_tokens,
        temperature=0.0,
        retries=0,
    )
    t0 = time.perf_counter()
    server = ensure_embedded_server(config.embedded, progress=lambda m: print(f"  {m}"))
    info = server.info
    assert info is not None
    print(
        f"embedded server: model file ready in {info.assemble_s:.1f}s, started in "
        f"{info.startup_s:.1f}s (total {time.perf_counter() - t0:.1f}s); {info.slots} slots x "
        f"{info.slot_ctx} tokens, {info.threads} threads, {os.cpu_count()} cores"
    )

    memory = MemoryResponseCache()
    gw = Gateway(config, cache=memory)
    warm = gw.complete_json("judge", messages(0), SCHEMA, "modality", "warmup")  # fills `memory`
    print(
        f"warm-up call: {warm.usage.latency_ms:.0f} ms, "
        f"{warm.usage.prompt_tokens}+{warm.usage.completion_tokens} tokens"
    )

    rates: dict[int, float] = {}
    offset = 1  # messages(0) was the warm-up; fresh prompts avoid llama.cpp prompt reuse
    for n in levels:
        walls, tokens = [], []
        for _ in range(args.rounds):
            wall, toks = asyncio.run(burst(gw, n, offset))
            offset += n
            walls.append(wall)
            tokens.append(toks)
        wall = statistics.median(walls)
        rates[n] = n / wall
        print(
            f"N={n}: {n} requests in {wall:.2f}s -> {rates[n]:.3f} req/s, "
            f"{statistics.median(tokens) / wall:.1f} completion tok/s, "
            f"ratio vs N=1: {rates[n] / rates[levels[0]]:.2f}x"
        )

    # The live reference: one request alone (the first level), queueing excluded.
    live_ms = 1000.0 * levels[0] / rates[levels[0]]
    _cache_ratio("memory", Gateway(config, cache=memory), warm.data, args.cache_hits, live_ms)
    with tempfile.TemporaryDirectory() as tmp:
        from store.db import make_engine
        from store.llm_cache import SqlResponseCache

        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        sql = SqlResponseCache(engine)
        sql.put(memory.get(warm.key))  # the same answer, now persistent
        _cache_ratio("sqlite", Gateway(config, cache=sql), warm.data, args.cache_hits, live_ms)
        engine.dispose()
    gw.close()
    return 0


def _cache_ratio(label: str, gw: Gateway, expected: dict, hits: int, live_ms: float) -> None:
    started = time.perf_counter()
    for _ in range(hits):
        res = gw.complete_json("judge", messages(0), SCHEMA, "modality", "hit")
        assert res.usage.cached and res.data == expected
    per_hit_ms = (time.perf_counter() - started) * 1000.0 / hits
    print(
        f"cache hit ({label}): {per_hit_ms:.3f} ms/call vs {live_ms:.0f} ms for one live call -> "
        f"{live_ms / per_hit_ms:,.0f}x faster"
    )


if __name__ == "__main__":
    sys.exit(main())
