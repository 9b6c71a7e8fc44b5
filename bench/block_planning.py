"""Block planning on hostile SKILL shapes (issue 36): parse + ``plan_blocks`` time.

Shapes: 20,000 sections all headed "## Notes" (900 KB, which the upload screen accepts),
50,000 empty headings, a 10 MB file on one line, and for scale a real policy (the
largest SKILL.md of the fixtures) at the default block size. Before the fix
they took 124 s, > 400 s and 83 s. Each figure is the median of ``--repeat`` runs; the
ratio column compares with the same shape at a tenth of its size within this run (near 10
means linear).

Run: ``python bench/block_planning.py [--repeat 3] [--max-tokens 1200]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.extract.blocks import plan_blocks  # noqa: E402
from workbench.skill.document import parse_skill  # noqa: E402

FRONT = "---\nname: hostile\ndescription: planning bench\n---\n\n"


def repeated_headings(n: int) -> str:
    return FRONT + "".join(f"## Notes\n\nRefund within {i % 30} days of delivery.\n\n" for i in range(n))


def empty_headings(n: int) -> str:
    return FRONT + "#\n" * n


def one_line(mb: float) -> str:
    sentence = "The agent refunds the order to the original payment method. "
    return FRONT + sentence * int(mb * 2**20 / len(sentence))


def timed(text: str, max_tokens: int, repeat: int) -> tuple[float, int]:
    times, blocks = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        blocks = len(plan_blocks(parse_skill(text, "bench/SKILL.md"), max_tokens))
        times.append(time.perf_counter() - t)
    return statistics.median(times), blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=1200)
    args = ap.parse_args()
    shapes = [
        ("20,000 '## Notes' sections", repeated_headings, 20_000),
        ("50,000 empty headings", empty_headings, 50_000),
        ("10 MB on one line", one_line, 10.0),
    ]
    timed(repeated_headings(50), args.max_tokens, 1)  # warm: the tokenizer loads once
    print(f"{'shape':<30} {'size':>10} {'blocks':>8} {'median s':>9} {'1/10 size s':>12} {'ratio':>6}")
    for name, make, n in shapes:
        small_s, _ = timed(make(n / 10 if isinstance(n, float) else n // 10), args.max_tokens, args.repeat)
        text = make(n)
        seconds, blocks = timed(text, args.max_tokens, args.repeat)
        print(f"{name:<30} {len(text.encode()) / 2**20:>8.1f}MB {blocks:>8} {seconds:>9.3f} "
              f"{small_s:>12.3f} {seconds / max(small_s, 1e-9):>6.1f}", flush=True)
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    for path in sorted(fixtures.rglob("SKILL.md"), key=lambda p: p.stat().st_size)[-1:]:
        seconds, blocks = timed(path.read_text(encoding="utf-8"), args.max_tokens, args.repeat)
        print(f"{'a real SKILL (' + path.parent.name + ')':<30} {path.stat().st_size / 2**20:>8.2f}MB "
              f"{blocks:>8} {seconds:>9.3f}")


if __name__ == "__main__":
    main()
