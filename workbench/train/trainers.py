"""The GRPO (keyworder) and OPD (judge) trainers: one small loop on transformers + PEFT.

Why not TRL's ``GRPOTrainer``/``GKDTrainer``: the OPD objective here is a per-token policy
gradient with a clipped k1 advantage under an entropy gate that must see each token's
old-policy entropy and find the verdict token in the decoded text; TRL's distillation
trainers optimise a (generalised) JSD over full distributions instead. Writing both
recipes on one ~200-line loop keeps the two comparable (same sampling, LoRA, schedule,
checkpoints, metrics) and testable on a tiny CPU model, and leaves no dependency on TRL's
fast-moving trainer arguments.

Schedule: ``epochs`` passes over the prompts in a per-epoch order drawn from ``seed``; each
optimiser step consumes ``global_batch`` completions (GRPO: ``global_batch / group`` prompts
× ``group`` candidates; OPD: ``global_batch`` prompts × 1), processed ``micro_batch`` at a
time (gradient accumulation). Constant learning rate, gradient norm clipped at 1.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from workbench.train.models import (
    LoraSettings,
    Messages,
    Samples,
    completion_logits,
    load_model,
    sample,
    token_logprobs,
    with_lora,
)
from workbench.train.opd import (
    DEFAULT_CLIP,
    DEFAULT_TOP_FRACTION,
    GATES,
    VERDICT_VALUE,
    always_supervised,
    entropy_gate,
    opd_loss,
    token_entropy,
    uniform_gate,
)
from workbench.train.rewards import group_advantages
from workbench.train.runs import (
    load_checkpoint,
    log_metrics,
    save_checkpoint,
    start_run,
    truncate_metrics,
)

# (prompt index, completion text) -> reward
RewardFn = Callable[[int, str], float]
Progress = Callable[[dict[str, Any]], None]


@dataclass
class TrainConfig:
    """Defaults follow the first paper's Table 13 schedule (two epochs, global batch 24,
    LoRA rank 32 / alpha 64, seed 17, k1 clamp [-10, 10]); the learning rate, token limit and
    sampling are ours. `train opd` fills these from a named recipe
    (``workbench.train.recipes``)."""

    epochs: int = 2
    global_batch: int = 24
    micro_batch: int = 4
    learning_rate: float = 1e-5
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0  # nucleus sampling; the OPD recipes sample at 0.7 / 0.9 (first paper, Table 13)
    save_every: int = 10
    max_steps: int | None = None
    seed: int = 17
    dtype: str = "float32"  # student and teacher weights; bfloat16 for a CPU run
    lora: LoraSettings = field(default_factory=LoraSettings)
    # GRPO
    group: int = 8
    beta: float = 0.0  # KL(policy ‖ base) weight (k3 estimator); 0 as in Dr. GRPO / DAPO
    # OPD
    gate: str = "entropy"
    top_fraction: float = DEFAULT_TOP_FRACTION
    clip: float = DEFAULT_CLIP
    # Verdict and termination tokens supervised beyond the entropy gate's fraction (ours; the
    # second paper gates on entropy alone).
    keep_outcome_tokens: bool = True
    recipe: str | None = None  # the named OPD recipe the settings came from (recorded)

    def check(self, kind: str) -> None:
        """Raise ValueError naming the bad setting."""
        if self.epochs < 1 or self.global_batch < 1 or self.micro_batch < 1:
            raise ValueError("--epochs, --global-batch and --micro-batch must be at least 1")
        if kind in ("grpo", "joint"):
            if self.group < 2:
                raise ValueError(f"--group must be at least 2 candidates per prompt, got {self.group}")
            if self.global_batch % self.group:
                raise ValueError(
                    f"--global-batch {self.global_batch} is not a multiple of --group {self.group}"
                )
        if self.gate not in GATES:
            raise ValueError(f"--gate must be one of {', '.join(GATES)}, got {self.gate!r}")
        if not self.learning_rate > 0 or self.max_new_tokens < 1:
            raise ValueError("--lr must be positive and --max-new-tokens at least 1")
        if not self.temperature > 0 or not 0 < self.top_p <= 1:
            raise ValueError("--temperature must be positive and --top-p in (0, 1]")
        if not self.clip > 0 or not 0 < self.top_fraction <= 1:
            raise ValueError("--clip must be positive and --top-fraction in (0, 1]")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainResult:
    run_dir: Path
    steps: int
    resumed_from: int
    adapter: Path
    metrics: list[dict[str, Any]]


def prompt_order(n: int, per_step: int, epochs: int, seed: int, step: int) -> list[int]:
    """Prompt indices of optimiser step ``step`` (0-based): a function of the step alone, so a
    resumed run continues the uninterrupted order."""
    start, out = step * per_step, []
    for pos in range(start, min(start + per_step, n * epochs)):
        epoch, offset = divmod(pos, n)
        order = list(range(n))
        random.Random(seed * 1000 + epoch).shuffle(order)
        out.append(order[offset])
    return out


def total_steps(n: int, per_step: int, config: TrainConfig) -> int:
    steps = math.ceil(n * config.epochs / per_step)
    return min(steps, config.max_steps) if config.max_steps is not None else steps


def _slice(s: Samples, rows: slice) -> Samples:
    return Samples(
        s.sequences[rows], s.attention[rows], s.prompt_len, s.completion[rows], s.valid[rows],
        s.texts[rows],
    )


class _Run:
    """Shared set-up: policy with LoRA, optimiser, run folder, resumption."""

    def __init__(self, kind: str, student: str | Path, run_dir: str | Path, config: TrainConfig,
                 resume: bool, extra: dict[str, Any]):
        config.check(kind)
        self.kind, self.config, self.run_dir = kind, config, Path(run_dir)
        base, self.tokenizer = load_model(student, trainable=True, dtype=config.dtype)
        torch.manual_seed(config.seed)  # LoRA's A matrices start random: same seed, same run
        self.model = with_lora(base, config.lora)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=config.learning_rate)
        meta = {**config.to_json(), "student": str(student), **extra}
        checkpoint = start_run(self.run_dir, kind, meta, resume)
        self.start = 0
        self.total = 0  # set by the trainer once the prompt count is known
        if checkpoint is not None:
            self.start = int(load_checkpoint(checkpoint, self.model, self.optimizer)["step"])
        # Steps logged after the checkpoint (or, with none, all of them) are redone.
        truncate_metrics(self.run_dir, self.start)

    def step_update(self) -> float:
        norm = float(torch.nn.utils.clip_grad_norm_(self.params, 1.0))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm

    def finish(self, step: int, progress: Progress | None, row: dict[str, Any]) -> None:
        log_metrics(self.run_dir, row)
        if progress:
            progress(row)
        last = step == self.total
        if step % self.config.save_every == 0 or last:
            save_checkpoint(self.run_dir, step, self.model, self.optimizer, {"kind": self.kind})

    def rollout(self, prompts: Sequence[Messages], step: int, per_step: int,
                group: int) -> tuple[list[int], Samples]:
        """Step ``step``'s prompts (``per_step`` of them, in the run's seeded order) and
        ``group`` completions of each from the policy, seeded by the step so a resumed run
        draws the same. Returns the prompt index of every completion, and the completions."""
        cfg = self.config
        idx = prompt_order(len(prompts), per_step, cfg.epochs, cfg.seed, step)
        torch.manual_seed(cfg.seed * 100_003 + step)
        self.model.eval()
        s = sample(self.model, self.tokenizer, [prompts[i] for i in idx], group,
                   cfg.max_new_tokens, cfg.temperature, cfg.top_p)
        return [i for i in idx for _ in range(group)], s

    def final(self, steps: int) -> TrainResult:
        from workbench.train.runs import read_metrics

        adapter = self.run_dir / "adapter"
        self.model.save_pretrained(str(adapter))
        self.tokenizer.save_pretrained(str(adapter))
        return TrainResult(self.run_dir, steps, self.start, adapter, read_metrics(self.run_dir))


def grpo_backward(run: _Run, s: Samples, advantages: Sequence[float]) -> tuple[float, float, float]:
    """Backpropagate the GRPO loss ``−Σ A_i · log πθ(token) / Σ tokens`` (token mean over the
    whole batch, plus ``beta`` · k3 KL to the base) of the sampled candidates ``s``, in
    micro-batches. Returns (loss, kl, completion tokens)."""
    cfg = run.config
    adv_t = torch.tensor(list(advantages), dtype=torch.float32, device=run.device)
    tokens = float(s.valid.sum().clamp(min=1))
    loss_total, kl_total = 0.0, 0.0
    for lo in range(0, len(s.texts), cfg.micro_batch):
        part = _slice(s, slice(lo, lo + cfg.micro_batch))
        valid = part.valid.float()
        lp = token_logprobs(completion_logits(run.model, part), part.completion)
        loss = -(adv_t[lo : lo + cfg.micro_batch, None] * lp * valid).sum() / tokens
        if cfg.beta > 0:
            with torch.no_grad(), run.model.disable_adapter():
                ref = token_logprobs(completion_logits(run.model, part), part.completion)
            delta = ref - lp
            k3 = (delta.exp() - delta - 1.0) * valid
            loss = loss + cfg.beta * k3.sum() / tokens
            kl_total += float(k3.detach().sum()) / tokens
        loss.backward()
        loss_total += float(loss.detach())
    return loss_total, kl_total, tokens


def load_teacher(teacher: str | Path, student: str | Path, run: _Run) -> Any:
    """The frozen teacher on the run's device; ValueError when its vocabulary is not the
    student's (the teacher scores the student's token ids)."""
    teacher_model, teacher_tok = load_model(teacher, trainable=False, dtype=run.config.dtype)
    if teacher_tok.get_vocab() != run.tokenizer.get_vocab():
        raise ValueError(
            f"teacher {teacher} and student {student} use different tokenizers; the teacher "
            "scores the student's tokens, so both need the same vocabulary"
        )
    teacher_model.to(run.device)
    return teacher_model


@dataclass(frozen=True)
class OpdPart:
    loss: float  # the (weighted) OPD loss backpropagated
    kl: float  # mean k1 over the completion tokens
    gated_share: float  # share of completion tokens supervised


def opd_backward(run: _Run, teacher_model: Any, s: Samples, weight: float = 1.0) -> OpdPart:
    """Backpropagate ``weight`` · the OPD loss of the student's completions ``s``, scored by
    ``teacher_model``, in micro-batches, on the tokens the configured gate keeps (fixed from
    the old policy before any gradient)."""
    cfg = run.config
    always = torch.tensor(
        [always_supervised(row.tolist(), run.tokenizer) for row in s.completion],
        dtype=torch.bool, device=run.device,
    ) & s.valid
    gates = []
    parts = [(lo, _slice(s, slice(lo, lo + cfg.micro_batch)))
             for lo in range(0, len(s.texts), cfg.micro_batch)]
    with torch.no_grad():
        for lo, part in parts:
            ent = token_entropy(completion_logits(run.model, part))
            valid = part.valid
            if cfg.gate == "entropy":
                keep = always[lo : lo + cfg.micro_batch] if cfg.keep_outcome_tokens else None
                gates.append(entropy_gate(ent, valid, keep, cfg.top_fraction))
            else:
                gates.append(uniform_gate(valid))
    gated = float(sum(g.sum() for g in gates).clamp(min=1))
    loss_total, kl_sum, share_sum = 0.0, 0.0, 0.0
    for (_lo, part), gate in zip(parts, gates, strict=True):
        lp = token_logprobs(completion_logits(run.model, part), part.completion)
        with torch.no_grad():
            tlp = token_logprobs(completion_logits(teacher_model, part), part.completion)
        loss, stats = opd_loss(lp, tlp, gate, part.valid, cfg.clip)
        (weight * loss * float(gate.sum()) / gated).backward()
        n = float(part.valid.sum())
        loss_total += weight * stats.loss * float(gate.sum()) / gated
        kl_sum += stats.kl * n
        share_sum += stats.gated_share * n
    tokens = float(s.valid.sum().clamp(min=1))
    return OpdPart(loss_total, kl_sum / tokens, share_sum / tokens)


def train_grpo(
    student: str | Path,
    prompts: Sequence[Messages],
    reward: RewardFn,
    run_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
) -> TrainResult:
    """GRPO on ``prompts`` (keyword prompts): ``group`` candidates per prompt, rewards from
    ``reward(prompt_index, completion)``, group-normalised advantages, token-mean policy
    gradient (one update per sample, so the PPO ratio is 1 and needs no clipping)."""
    cfg = config or TrainConfig()
    if not prompts:
        raise ValueError("no prompts to train on; check the records file")
    run = _Run("grpo", student, run_dir, cfg, resume, {"prompts": len(prompts)})
    per_step = cfg.global_batch // cfg.group
    run.total = total_steps(len(prompts), per_step, cfg)
    for step in range(run.start, run.total):
        t0 = time.perf_counter()
        owners, s = run.rollout(prompts, step, per_step, cfg.group)
        rewards = [float(reward(i, text)) for i, text in zip(owners, s.texts, strict=True)]
        adv = group_advantages(rewards, cfg.group)
        run.model.train()
        loss_total, kl_total, tokens = grpo_backward(run, s, adv.advantages)
        grad_norm = run.step_update()
        mean = sum(rewards) / len(rewards)
        row = {
            "step": step + 1, "total_steps": run.total, "reward_mean": mean,
            "reward_std": math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards)),
            "zero_advantage_share": adv.zero_share, "loss": loss_total, "kl": kl_total,
            "completion_tokens": tokens / len(owners), "grad_norm": grad_norm,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        run.finish(step + 1, progress, row)
    return run.final(run.total)


def train_opd(
    student: str | Path,
    teacher: str | Path,
    prompts: Sequence[Messages],
    run_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    labels: Sequence[bool | None] | None = None,
    resume: bool = False,
    progress: Progress | None = None,
) -> TrainResult:
    """OPD on ``prompts`` (judge prompts), gated as ``config`` says: the student samples one
    completion per prompt (the recipes' one rollout per prompt), the frozen ``teacher``
    scores its tokens. ``labels`` (violation or not) only
    feed the logged verdict accuracy; the objective uses no label."""
    cfg = config or TrainConfig()
    if not prompts:
        raise ValueError("no prompts to train on; check the records file")
    run = _Run("opd", student, run_dir, cfg, resume, {"teacher": str(teacher), "prompts": len(prompts)})
    teacher_model = load_teacher(teacher, student, run)
    run.total = total_steps(len(prompts), cfg.global_batch, cfg)
    for step in range(run.start, run.total):
        t0 = time.perf_counter()
        idx, s = run.rollout(prompts, step, cfg.global_batch, 1)  # one completion per prompt
        run.model.train()
        opd = opd_backward(run, teacher_model, s)
        tokens = float(s.valid.sum().clamp(min=1))
        grad_norm = run.step_update()
        row = {
            "step": step + 1, "total_steps": run.total, "loss": opd.loss,
            "kl": opd.kl, "gated_share": opd.gated_share,
            "completion_tokens": tokens / len(idx), "grad_norm": grad_norm,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        if labels is not None:
            row["verdict_accuracy"] = _verdict_accuracy(s.texts, [labels[i] for i in idx])
        run.finish(step + 1, progress, row)
    return run.final(run.total)


def _verdict_accuracy(texts: Sequence[str], labels: Sequence[bool | None]) -> float | None:
    """Share of labelled completions whose ``"violation"`` value matches; unparsable = wrong."""
    scored = [(t, y) for t, y in zip(texts, labels, strict=True) if y is not None]
    if not scored:
        return None
    right = sum(bool(m := VERDICT_VALUE.search(text)) and (m.group(1).lower() == "true") == label
                for text, label in scored)
    return right / len(scored)
