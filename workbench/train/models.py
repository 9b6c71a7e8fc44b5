"""Models for training: load a transformers checkpoint, wrap it in LoRA, sample, score.

Loading lives in ``workbench.llm.transformers_load`` (the product's activations use it too);
its names are re-exported here for the trainers.

Student and teacher are any causal-LM checkpoints transformers can load (a folder or a hub
id already in the local cache). LoRA goes on every linear layer of the language model
(PEFT's ``all-linear``, which leaves the output head alone), rank 32 by default as in the
first paper's distillation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from workbench.llm.transformers_load import (  # noqa: F401  (the loading half, re-exported)
    DTYPES,
    EMBEDDED,
    NATIVE_BF16_FLAGS,
    Messages,
    ModelLoadError,
    _source,
    cpu_flags,
    load_model,
    render_prompt,
    slow_bfloat16_warning,
)


@dataclass(frozen=True)
class LoraSettings:
    rank: int = 32
    alpha: int = 64
    dropout: float = 0.05
    # 0: every decoder layer (the paper's setting). N: the last N layers only, so the backward
    # pass stops there: on a CPU that is what makes a 1.5B run affordable (see README).
    layers: int = 0


def lora_targets(model: Any, last_layers: int) -> str | list[str]:
    """PEFT ``target_modules``: every linear layer of the language model, or (``last_layers``
    > 0) those of the last N decoder layers, by full name."""
    if last_layers <= 0:
        return "all-linear"
    blocks = model.get_decoder().layers
    if last_layers > len(blocks):
        raise ModelLoadError(f"--lora-layers {last_layers} but the model has {len(blocks)} layers")
    chosen = {id(b) for b in list(blocks)[-last_layers:]}
    return [f"{name}.{sub}" for name, module in model.named_modules() if id(module) in chosen
            for sub, m in module.named_modules() if isinstance(m, torch.nn.Linear)]


def with_lora(model: Any, lora: LoraSettings) -> Any:
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora_targets(model, lora.layers),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


@dataclass
class Samples:
    """``group`` completions per prompt, right after their (left-padded) prompts."""

    sequences: torch.Tensor  # [N, P + T] prompt + completion ids
    attention: torch.Tensor  # [N, P + T]
    prompt_len: int  # P (padded)
    completion: torch.Tensor  # [N, T]
    valid: torch.Tensor  # [N, T] completion tokens up to and including the first EOS
    texts: list[str]


def sample(
    model: Any,
    tokenizer: Any,
    prompts: list[Messages],
    group: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
) -> Samples:
    texts = [render_prompt(tokenizer, m) for m in prompts]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    enc = {k: v.to(model.device) for k, v in enc.items()}
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=temperature,
            top_p=top_p,
            top_k=0,
            max_new_tokens=max_new_tokens,
            num_return_sequences=group,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    prompt_len = enc["input_ids"].shape[1]
    completion = out[:, prompt_len:]
    is_eos = completion == tokenizer.eos_token_id
    # Valid up to and including the first EOS: the termination token is trained too.
    after_eos = (is_eos.cumsum(dim=1) - is_eos.long()) > 0
    valid = ~after_eos
    prompt_attention = enc["attention_mask"].repeat_interleave(group, dim=0)
    attention = torch.cat([prompt_attention, valid.long()], dim=1)
    decoded = [
        tokenizer.decode(row[mask], skip_special_tokens=True)
        for row, mask in zip(completion, valid, strict=True)
    ]
    return Samples(out, attention, prompt_len, completion, valid, decoded)


def completion_logits(model: Any, s: Samples) -> torch.Tensor:
    """Logits predicting each completion token: ``[N, T, V]``."""
    # Positions from the mask, so a left-padded prompt is scored as if it were unpadded.
    positions = (s.attention.cumsum(dim=1) - 1).clamp(min=0)
    # Only the positions that predict completion tokens reach the output head: for a
    # 600-token prompt and a 152K vocabulary the full logits would be ~0.4 GB per sequence.
    keep = s.sequences.shape[1] - s.prompt_len + 1
    logits = model(input_ids=s.sequences, attention_mask=s.attention, position_ids=positions,
                   logits_to_keep=keep).logits
    return logits[:, :-1, :]


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
