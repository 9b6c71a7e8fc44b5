"""What the trainers of ``workbench train`` share, kept apart from ``commands/train.py``
(its commands and what runs the lab): the flags every trainer takes, a trainer's progress
line and its result, the audit cases of a records file and the judge of the verified reward.
Nothing here imports the lab."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from workbench.commands._common import CliError


def add_opd_gate(p: argparse.ArgumentParser) -> None:
    """Which of the student's tokens the joint step's OPD supervises (`train opd` takes
    these from its recipe)."""
    p.add_argument("--gate", choices=("entropy", "none"), default="entropy",
                   help="OPD gate: entropy (top fraction + verdict/termination tokens) or none "
                   "(every token: uniform OPD)")
    p.add_argument("--top-fraction", type=float, default=0.2, help="entropy gate share (0.2)")
    p.add_argument("--clip", type=float, default=10.0,
                   help="k1 clamp c, [-c, c] (default 10, the first paper's Table 13)")


def add_trainer_flags(p: argparse.ArgumentParser, max_new_tokens: int | None,
                      temperature: float = 1.0, top_p: float = 1.0) -> None:
    """The flags every trainer takes; ``max_new_tokens=None`` marks a recipe-driven command
    (`train opd`): the settings a recipe holds default to None there, filled from it."""
    recipe = max_new_tokens is None

    def default(value: Any, text: str) -> tuple[Any, str]:
        return (None, "the recipe's") if recipe else (value, text)

    p.add_argument("--student", required=True,
                   help="student checkpoint: a folder, a cached hub id, a .gguf file, or "
                   "'embedded' / 'embedded:small' (the workbench's 1.5B / 0.5B GGUF, dequantised)")
    p.add_argument("--run-dir", required=True, help="run folder: checkpoints, metrics, adapter")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    epochs, epochs_text = default(2, "2")
    batch, batch_text = default(24, "24")
    p.add_argument("--epochs", type=int, default=epochs,
                   help=f"passes over the records (default {epochs_text})")
    p.add_argument("--global-batch", type=int, default=batch,
                   help=f"completions per step (default {batch_text})")
    p.add_argument("--micro-batch", type=int, default=4, help="completions per forward pass (4)")
    lr, lr_text = default(1e-5, "1e-5")
    rank, rank_text = default(32, "32")
    p.add_argument("--lr", type=float, default=lr, help=f"learning rate (default {lr_text})")
    p.add_argument("--lora-rank", type=int, default=rank, help=f"LoRA rank (default {rank_text})")
    p.add_argument("--lora-layers", type=int, default=0,
                   help="LoRA on the last N decoder layers only (default 0: all, as the paper); "
                   "the backward pass stops there, which makes a CPU run affordable")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                   help="model weights in memory (default float32); bfloat16 halves "
                   "memory and is faster on a GPU or a CPU with AVX-512 BF16 / AMX, ~5x "
                   "slower over long prompts on one without (a warning says so); adapters "
                   "stay float32")
    tokens, tokens_text = default(max_new_tokens, str(max_new_tokens))
    temp, temp_text = default(temperature, f"{temperature:g}")
    nucleus, nucleus_text = default(top_p, f"{top_p:g}" + ("" if top_p < 1 else ": off"))
    p.add_argument("--max-new-tokens", type=int, default=tokens,
                   help=f"completion length limit (default {tokens_text})")
    p.add_argument("--temperature", type=float, default=temp,
                   help=f"sampling temperature (default {temp_text})")
    p.add_argument("--top-p", type=float, default=nucleus,
                   help="nucleus sampling: the smallest token set of this probability "
                   f"(default {nucleus_text})")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--save-every", type=int, default=10, help="checkpoint interval in steps")
    seed, seed_text = default(17, "17")
    p.add_argument("--seed", type=int, default=seed,
                   help=f"data order and sampling seed (default {seed_text})")


def progress(row: dict[str, Any]) -> None:
    parts = [f"step {row['step']}/{row['total_steps']}"]
    for key in ("reward_mean", "zero_advantage_share", "closure_share", "kl", "gated_share",
                "verdict_accuracy", "loss"):
        if row.get(key) is not None:
            parts.append(f"{key} {row[key]:.4f}")
    parts.append(f"{row['seconds']:.1f}s")
    print("… " + ", ".join(parts), file=sys.stderr, flush=True)


def records_with_cases(rows: list[dict], cases: list, cases_path: str) -> dict:
    """The audit cases of ``rows`` by id; a ``CliError`` names records whose case is not in
    ``cases`` (read from ``cases_path``)."""
    by_id = {c.id: c for c in cases}
    missing = [r["id"] for r in rows if r["id"] not in by_id]
    if missing:
        raise CliError(f"{len(missing)} records have no case in {cases_path} (first: {missing[:3]}); "
                       "pass the cases the records were made from")
    return by_id


def trained(train: Callable[[], Any], before: str = "") -> int:
    """Run ``train`` (a trainer call) and print what it did; a ValueError it raises is a
    command-line problem (a WorkbenchError reaches the CLI's handler as it is)."""
    try:
        result = train()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(f"{before}{result.steps} steps (resumed from {result.resumed_from}); adapter: {result.adapter}")
    return 0


def verified_judge():
    from workbench.audit.judge import judge_whole
    from workbench.llm import Gateway, LlmConfigError, ModelCallError

    try:
        gateway = Gateway.from_env()
    except LlmConfigError as exc:
        raise CliError(f"the verified reward calls the judge role: {exc}") from None

    def judge(case, context):
        try:
            verdict, _, _ = judge_whole(gateway, case, context.text, context.units, f"grpo:{case.id}")
        except ModelCallError:
            return None  # no verdict: the candidate earns nothing
        return verdict.violation

    return judge
