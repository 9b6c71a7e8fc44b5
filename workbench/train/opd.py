"""Entropy-gated on-policy distillation (OPD) for the judge: the per-token pieces.

The student generates; the frozen teacher only *scores* the student's tokens. For each
sampled token ``a_t``:

    k1_t = log πθ(a_t | x<t) − log π_T(a_t | x<t)          (first paper, appendix D.3)
    A_t  = −clip(k1_t, −c, c), detached                    (c = 10: first paper, Table 13)

and the loss is ``−Σ_t g_t · A_t · log πθ(a_t | x<t) / Σ_t g_t``: a policy gradient whose
expectation is the gradient of the reverse KL(πθ ‖ π_T) on the student's own samples.
Clipping bounds the step where the two models disagree wildly (e.g. the teacher gives a
token ~0 probability).

The gate ``g_t`` (second paper, §4.2.2) keeps supervision where the student is unsure: the
top 20 % of the completion's tokens by old-policy entropy. Ours, an option
(``keep_outcome_tokens``, on in the ``cpu`` recipe, off in the second paper's): also the
verdict token(s) (the value of ``"violation"``) and the termination token, which decide the
outcome however confident the student is. ``gate="none"`` supervises every completion token
(the first paper's OPD). The papers' and our settings: ``workbench.train.recipes``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

GATES = ("entropy", "none")
DEFAULT_TOP_FRACTION = 0.2
DEFAULT_CLIP = 10.0  # the first paper's clamp [-10, 10] (Table 13)
VERDICT_VALUE = re.compile(r'"violation"\s*:\s*(true|false)', re.IGNORECASE)


def k1_estimator(student_logp: torch.Tensor, teacher_logp: torch.Tensor) -> torch.Tensor:
    """Per-token ``log πθ(a_t) − log π_T(a_t)`` (same shape as the inputs)."""
    return student_logp - teacher_logp


def opd_advantage(
    student_logp: torch.Tensor, teacher_logp: torch.Tensor, clip: float = DEFAULT_CLIP
) -> torch.Tensor:
    """``−clip(k1, −clip, clip)``, detached: a token the teacher likes more than the student
    gets a positive advantage. Raises ValueError for a non-positive clip."""
    if not clip > 0:
        raise ValueError(f"the k1 clip must be positive, got {clip}")
    return -k1_estimator(student_logp, teacher_logp).clamp(-clip, clip).detach()


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of the next-token distribution at each position: ``[..., V] -> [...]``."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def entropy_gate(
    entropy: torch.Tensor,
    valid: torch.Tensor,
    always: torch.Tensor | None = None,
    top_fraction: float = DEFAULT_TOP_FRACTION,
) -> torch.Tensor:
    """Boolean gate ``[B, T]``: per row, the ``ceil(top_fraction · n)`` highest-entropy of the
    ``n`` valid tokens (ties: earlier token first), OR the ``always`` tokens (verdict and
    termination, when kept beyond the fraction; ``None``: none), restricted to valid tokens."""
    if not 0 < top_fraction <= 1:
        raise ValueError(f"the entropy gate keeps a fraction in (0, 1], got {top_fraction}")
    if entropy.shape != valid.shape:
        raise ValueError(f"entropy {tuple(entropy.shape)} and mask {tuple(valid.shape)} differ in shape")
    valid = valid.bool()
    gate = torch.zeros_like(valid)
    for row in range(entropy.shape[0]):
        positions = valid[row].nonzero(as_tuple=True)[0]
        n = int(positions.numel())
        if n == 0:
            continue
        k = math.ceil(top_fraction * n - 1e-9)
        order = torch.argsort(-entropy[row, positions].float(), stable=True)
        gate[row, positions[order[:k]]] = True
    if always is not None:
        gate |= always.bool() & valid
    return gate


def uniform_gate(valid: torch.Tensor) -> torch.Tensor:
    return valid.bool().clone()


def always_supervised(
    completion_ids: Sequence[int], tokenizer, eos_token_ids: Sequence[int] | int | None = None
) -> list[bool]:
    """Which completion tokens are always supervised: those that spell the value of
    ``"violation"`` (``true``/``false``) and the first termination (EOS) token."""
    ids = list(completion_ids)
    eos = eos_token_ids if eos_token_ids is not None else tokenizer.eos_token_id
    eos_set = {eos} if isinstance(eos, int) else set(eos or [])
    out = [False] * len(ids)
    # Character offsets of each token in the decoded completion, to map the verdict's span.
    ends, text = [], ""
    for i in range(len(ids)):
        text = tokenizer.decode(ids[: i + 1], skip_special_tokens=True)
        ends.append(len(text))
    match = VERDICT_VALUE.search(text)
    if match:
        lo, hi = match.span(1)
        start = 0
        for i, end in enumerate(ends):
            if end > lo and start < hi:
                out[i] = True
            start = end
    for i, t in enumerate(ids):
        if t in eos_set:
            out[i] = True
            break
    return out


@dataclass(frozen=True)
class OpdStats:
    loss: float
    kl: float  # mean k1 over the completion tokens: an estimate of KL(student ‖ teacher)
    gated_share: float  # share of completion tokens that are supervised


def opd_loss(
    student_logp: torch.Tensor,
    teacher_logp: torch.Tensor,
    gate: torch.Tensor,
    valid: torch.Tensor,
    clip: float = DEFAULT_CLIP,
) -> tuple[torch.Tensor, OpdStats]:
    """``−Σ g·A·log πθ / Σ g`` with ``A = opd_advantage``; ``student_logp`` carries grad."""
    adv = opd_advantage(student_logp, teacher_logp, clip)
    g = gate.float()
    denom = g.sum().clamp(min=1.0)
    loss = -(g * adv * student_logp).sum() / denom
    v = valid.float()
    kl = float((k1_estimator(student_logp, teacher_logp).detach() * v).sum() / v.sum().clamp(min=1.0))
    share = float(g.sum() / v.sum().clamp(min=1.0))
    return loss, OpdStats(float(loss.detach()), kl, share)
