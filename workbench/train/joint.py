"""The joint step (second paper, §4.2): GRPO for retrieval and OPD for judgment on one
rollout batch, beside the separate ``train grpo`` and ``train opd`` runs.

One student (one LoRA) plays both stages. Each optimiser step:

1. the student writes ``group`` keyword candidates per case (the GRPO group);
2. each candidate's keywords seed the rule graph; a valid, non-empty closure gives the judge
   prompt the audit would send (``judge_prompt``), a useless candidate gives none;
3. the student judges each closure it got (one verdict completion per candidate);
4. the verified reward of each candidate is ``valid closure × correct verdict``, the verdict
   being the student's own in step 3: the retrieval stage is rewarded for closures the judge
   it trains alongside gets right — no external judge call;
5. the frozen teacher scores the student's judge completions (entropy-gated OPD, as
   ``train opd``);
6. one update of ``L = L_GRPO(keyword tokens) + w · L_OPD(judge tokens)``.

:func:`joint_loss` is the same objective on full tensors, for tests and for reading: the
trainer computes it in micro-batches (``trainers.grpo_backward`` and ``opd_backward``, the
pieces the separate runs use), which sums to the same gradient.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from workbench.extras.lab_defaults import DEFAULT_JUDGE_TOKENS, DEFAULT_OPD_WEIGHT  # shown by --help
from workbench.train.models import Messages, sample
from workbench.train.opd import DEFAULT_CLIP, VERDICT_VALUE, opd_loss
from workbench.train.rewards import group_advantages
from workbench.train.trainers import (
    Progress,
    TrainConfig,
    TrainResult,
    _Run,
    grpo_backward,
    load_teacher,
    opd_backward,
    total_steps,
)

# (prompt index, keyword completion) -> the judge messages for its closure, or None when the
# candidate's keywords are invalid or seed nothing (the reward is then 0, nothing is judged).
JudgePrompt = Callable[[int, str], Messages | None]


@dataclass(frozen=True)
class JointSettings:
    opd_weight: float = DEFAULT_OPD_WEIGHT  # w: the judgment loss against the retrieval loss
    judge_max_new_tokens: int = DEFAULT_JUDGE_TOKENS  # the verdict's length limit

    def check(self) -> None:
        if not self.opd_weight >= 0 or not math.isfinite(self.opd_weight):
            raise ValueError(f"--opd-weight must be 0 or more, got {self.opd_weight}")
        if self.judge_max_new_tokens < 1:
            raise ValueError("--judge-max-new-tokens must be at least 1")


def parse_verdict(text: str) -> bool | None:
    """The ``"violation"`` value of a judge completion (untrusted), None when absent."""
    match = VERDICT_VALUE.search(text)
    return None if match is None else match.group(1).lower() == "true"


def verified_rewards(has_closure: Sequence[bool], verdicts: Sequence[bool | None],
                     labels: Sequence[bool | None]) -> list[float]:
    """Per candidate: 1 when its closure is valid and the verdict on it matches the label,
    else 0 (no closure, no verdict, or an unlabelled case)."""
    return [1.0 if ok and v is not None and y is not None and v == y else 0.0
            for ok, v, y in zip(has_closure, verdicts, labels, strict=True)]


@dataclass(frozen=True)
class JointLoss:
    total: torch.Tensor
    grpo: float
    opd: float


def joint_loss(
    keyword_logp: torch.Tensor, advantages: torch.Tensor, keyword_valid: torch.Tensor,
    judge_logp: torch.Tensor, teacher_logp: torch.Tensor, gate: torch.Tensor, judge_valid: torch.Tensor,
    *, opd_weight: float = DEFAULT_OPD_WEIGHT, clip: float = DEFAULT_CLIP,
) -> JointLoss:
    """``−Σ A_i·log πθ(k) / Σ tokens  +  w · (−Σ g·A_opd·log πθ(j) / Σ g)`` on full tensors:
    keyword tokens ``[N, Tk]`` with one advantage per candidate ``[N]``, judge tokens
    ``[M, Tj]`` (one judge completion per candidate that had a closure) with the teacher's
    log-probabilities and the gate."""
    tokens = keyword_valid.float().sum().clamp(min=1.0)
    grpo = -(advantages[:, None] * keyword_logp * keyword_valid.float()).sum() / tokens
    if judge_logp.numel():
        opd, _ = opd_loss(judge_logp, teacher_logp, gate, judge_valid, clip)
    else:
        opd = torch.zeros((), dtype=grpo.dtype)
    return JointLoss(grpo + opd_weight * opd, float(grpo.detach()), float(opd.detach()))


def train_joint(
    student: str | Path,
    teacher: str | Path,
    keyword_prompts: Sequence[Messages],
    judge_prompt: JudgePrompt,
    labels: Sequence[bool | None],
    run_dir: str | Path,
    config: TrainConfig | None = None,
    joint: JointSettings | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
) -> TrainResult:
    """The joint GRPO + OPD run (see the module text). ``labels``: violation or not, per
    keyword prompt (the verified reward needs them)."""
    cfg, settings = config or TrainConfig(), joint or JointSettings()
    settings.check()
    if not keyword_prompts:
        raise ValueError("no prompts to train on; check the records file")
    if len(labels) != len(keyword_prompts):
        raise ValueError(f"{len(labels)} labels for {len(keyword_prompts)} prompts")
    extra = {"teacher": str(teacher), "prompts": len(keyword_prompts),
             "opd_weight": settings.opd_weight, "judge_max_new_tokens": settings.judge_max_new_tokens}
    run = _Run("joint", student, run_dir, cfg, resume, extra)
    teacher_model = load_teacher(teacher, student, run)
    per_step = cfg.global_batch // cfg.group
    run.total = total_steps(len(keyword_prompts), per_step, cfg)
    for step in range(run.start, run.total):
        t0 = time.perf_counter()
        owners, kw = run.rollout(keyword_prompts, step, per_step, cfg.group)
        messages = [judge_prompt(i, text) for i, text in zip(owners, kw.texts, strict=True)]
        judged = [k for k, m in enumerate(messages) if m is not None]
        verdicts: list[bool | None] = [None] * len(owners)
        js = None
        if judged:
            js = sample(run.model, run.tokenizer, [messages[k] for k in judged], 1,
                        settings.judge_max_new_tokens, cfg.temperature, cfg.top_p)
            for k, text in zip(judged, js.texts, strict=True):
                verdicts[k] = parse_verdict(text)
        has_closure = [m is not None for m in messages]
        rewards = verified_rewards(has_closure, verdicts, [labels[i] for i in owners])
        adv = group_advantages(rewards, cfg.group)
        run.model.train()
        grpo, _kl_base, tokens = grpo_backward(run, kw, adv.advantages)
        opd = opd_backward(run, teacher_model, js, settings.opd_weight) if js is not None else None
        grad_norm = run.step_update()
        mean = sum(rewards) / len(rewards)
        given = [(verdicts[k], labels[owners[k]]) for k in judged if labels[owners[k]] is not None]
        row = {
            "step": step + 1, "total_steps": run.total, "reward_mean": mean,
            "zero_advantage_share": adv.zero_share,
            "closure_share": len(judged) / len(owners),
            "verdict_accuracy": (sum(v == y for v, y in given) / len(given)) if given else None,
            "loss_grpo": grpo, "loss_opd": opd.loss if opd else 0.0,
            "loss": grpo + (opd.loss if opd else 0.0),
            "kl": opd.kl if opd else None, "gated_share": opd.gated_share if opd else None,
            "completion_tokens": tokens / len(owners),
            "judge_tokens": float(js.valid.sum()) / len(judged) if js is not None else 0.0,
            "grad_norm": grad_norm, "seconds": round(time.perf_counter() - t0, 3),
        }
        run.finish(step + 1, progress, row)
    return run.final(run.total)
