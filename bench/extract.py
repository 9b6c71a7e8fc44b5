"""Extraction cost and incremental re-runs.

Extracts a generated 10-section SKILL (~300 tokens) with an empty step store, edits one
sentence of section 6, and extracts again with the same store. Prints:

- model tokens spent per source token (first run);
- the re-run's model calls, tokens and time as ratios of the first run. Goal: time <= 0.2.

Modes (all ratios are within one run of this script):

- live (default): the embedded model, in this process or, with ``--attach URL``, a running
  ``workbench model serve``; times are measured wall-clock times. ``--record`` answers what
  ``fixtures/recordings/extract_bench.jsonl`` already holds from it and appends the rest
  (so its times are not live times: run ``--replay`` afterwards for the ratio).
- ``--replay``: answers come from that recording. Wall times then measure only the pipeline,
  so the time ratio printed is *modelled* from the recorded token counts at the embedded
  model's reference speed (52 prompt and 18 generated tokens per second on 2 cores).

    .venv/bin/python bench/extract.py --attach http://127.0.0.1:8931/v1 --record
    .venv/bin/python bench/extract.py --replay
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.extract import MemoryStepStore, extract_skill  # noqa: E402
from workbench.llm import Gateway, Replayer, load_config  # noqa: E402
from workbench.llm.tokens import count_tokens  # noqa: E402
from workbench.skill.document import parse_skill  # noqa: E402

RECORDING = ROOT / "fixtures" / "recordings" / "extract_bench.jsonl"
PROMPT_TPS, GEN_TPS = 52.0, 18.0
EDITED_SECTION = 6

TOPICS = [
    ("Greeting", "The agent must greet the customer by name when the name is known.",
     "The agent must not use nicknames."),
    ("Identity", "Before discussing an account, the agent must verify the customer's email address.",
     "The agent must never read a full card number aloud."),
    ("Orders", "The agent may look up any order that belongs to the verified customer.",
     "The agent must not change an order that has already shipped."),
    ("Cancellations", "An order can be cancelled only while it is still processing.",
     "The agent must ask for the reason before cancelling an order."),
    ("Returns", "Items may be returned within 30 days of delivery.",
     "The agent must not accept a return of opened software."),
    ("Refunds", "Refunds must go to the original payment method.",
     "The agent must never refund more than the amount paid."),
    ("Exchanges", "The agent may exchange an item for the same item in another size.",
     "Exchanges of sale items are not allowed."),
    ("Shipping", "The agent must quote delivery dates only from the tracking system.",
     "The agent may upgrade shipping for free after a delayed delivery."),
    ("Escalation", "The agent must transfer the customer to a supervisor when asked twice.",
     "The agent must not promise compensation before a supervisor approves it."),
    ("Closing", "The agent must summarise the actions taken before ending the conversation.",
     "The agent must ask whether anything else is needed."),
]


def bench_skill(edited: bool = False) -> str:
    parts = ["---\nname: bench-store\ndescription: A ten-section store policy for the benchmark.\n---\n",
             "# Store support policy\n"]
    for n, (title, a, b) in enumerate(TOPICS, 1):
        if edited and n == EDITED_SECTION:
            a = a.replace("original payment method", "original payment method within five days")
        parts.append(f"\n## {title}\n\n{a}\n{b}\n")
    return "".join(parts)


def modelled_seconds(report) -> float:
    return report.prompt_tokens / PROMPT_TPS + report.completion_tokens / GEN_TPS


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replay", action="store_true", help=f"answer from {RECORDING.name}")
    parser.add_argument("--record", action="store_true", help=f"append exchanges to {RECORDING.name}")
    parser.add_argument("--attach", help="URL of a running `workbench model serve` (.../v1)")
    args = parser.parse_args()

    config = load_config(env={})
    if args.replay:
        gateway = Gateway(config, recorder=Replayer(RECORDING))
    else:
        from workbench.llm.transport import LiteLLMTransport

        # Requests are keyed with the default configuration; --attach only changes where the
        # embedded roles are served (as fixtures/extract/record.py does).
        live = LiteLLMTransport(config.attached_to(args.attach) if args.attach else config)
        if args.record:
            # Requests already in the recording are answered from it; only new ones (after a
            # prompt change) go to the model, so re-recording is resumable and cheap. Their
            # times are then not live times: read the ratio from --replay afterwards.
            import importlib.util

            script = ROOT / "fixtures" / "extract" / "record.py"
            spec = importlib.util.spec_from_file_location("record", script)
            record = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(record)
            gateway = Gateway(config, transport=record.ReplayThenRecord(RECORDING, live))
        else:
            gateway = Gateway(config, transport=live)

    store = MemoryStepStore()
    first_doc, second_doc = parse_skill(bench_skill()), parse_skill(bench_skill(edited=True))
    t0 = time.perf_counter()
    _, first = extract_skill(first_doc, gateway, store)
    t1 = time.perf_counter()
    _, second = extract_skill(second_doc, gateway, store)
    t2 = time.perf_counter()

    source_tokens = count_tokens(first_doc.source)
    first_calls, second_calls = first.model_calls, second.model_calls
    first_tokens = first.prompt_tokens + first.completion_tokens
    second_tokens = second.prompt_tokens + second.completion_tokens
    print(f"mode: {'replay (modelled times)' if args.replay else 'live (measured times)'}; "
          f"model {first.extractor_model}")
    print(f"SKILL: 10 sections, {source_tokens} tokens; first run {len(first.blocks)} blocks, "
          f"{first.rules} rules, {first.edges} edges, {len(first.span_errors)} span errors")
    print(f"tokens spent per source token (first run): {first_tokens / source_tokens:.2f} "
          f"({first.prompt_tokens} prompt + {first.completion_tokens} generated)")
    print(f"re-run after editing section {EDITED_SECTION}: {second_calls}/{first_calls} model calls, "
          f"{second.blocks_cached}/{len(second.blocks)} blocks reused, "
          f"tokens ratio {second_tokens / max(1, first_tokens):.3f}")
    if args.replay:
        ratio = modelled_seconds(second) / max(1e-9, modelled_seconds(first))
        print(f"modelled time: first {modelled_seconds(first):.0f}s, re-run {modelled_seconds(second):.0f}s, "
              f"ratio {ratio:.3f} (goal <= 0.2)")
    else:
        ratio = (t2 - t1) / max(1e-9, t1 - t0)
        print(f"wall time: first {t1 - t0:.1f}s, re-run {t2 - t1:.1f}s, ratio {ratio:.3f} (goal <= 0.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
