"""A trained LoRA adapter, back in the audit: PEFT's adapter folder as a llama.cpp GGUF adapter.

The embedded model is a quantised GGUF served by llama.cpp, which applies a LoRA adapter at
run time (``workbench model serve --lora ADAPTER.gguf``), so the base weights are never
merged, re-quantised or converted. An adapter GGUF is a GGUF file of ``general.type`` =
``adapter`` whose tensors are named after the base tensors they change, with the suffixes
``.lora_a`` and ``.lora_b``. PEFT stores ``lora_A`` as (rank, in) and ``lora_B`` as
(out, rank), which is exactly what llama.cpp expects (GGUF lists dimensions in the reverse
order, so ``a.ne[0]`` is the base tensor's input width and ``b.ne[1]`` its output width):
no transpose. llama.cpp scales the product by ``alpha / rank`` from ``adapter.lora.alpha``,
as PEFT does for a plain (non-rsLoRA) adapter.

Every tensor is checked against the base GGUF before anything is written, so an adapter
trained on another model fails here, naming the tensor, and not as garbage at audit time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkbenchError

# PEFT's saved keys: base_model.model.<module path>.lora_A.weight (no adapter name).
_PEFT_KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<which>[AB])\.weight$")


class AdapterExportError(WorkbenchError, ValueError):
    """The adapter cannot be written for this base model; the message says why and what to do."""


@dataclass(frozen=True)
class ExportedAdapter:
    path: Path
    architecture: str
    rank: int
    alpha: float
    tensors: int  # pairs (a, b) written


def _read_adapter(folder: Path) -> tuple[dict, dict]:
    config_path = folder / "adapter_config.json"
    weights_path = folder / "adapter_model.safetensors"
    if not config_path.is_file() or not weights_path.is_file():
        raise AdapterExportError(
            f"{folder} is not a PEFT adapter folder (needs adapter_config.json and "
            "adapter_model.safetensors); give the run's adapter/ folder or a checkpoint's"
        )
    config = json.loads(config_path.read_text(encoding="utf-8"))
    unsupported = [k for k in ("use_dora", "use_rslora") if config.get(k)]
    if unsupported:
        raise AdapterExportError(
            f"{folder}: {', '.join(unsupported)} adapters have no llama.cpp equivalent; train "
            "a plain LoRA (the workbench trainers do)"
        )
    from safetensors.numpy import load_file

    return config, load_file(str(weights_path))


def _base_tensors(base: Path) -> tuple[str, int, dict[str, tuple[int, ...]]]:
    """(architecture, block count, {tensor name: numpy-order shape}) of a GGUF model."""
    import gguf

    try:
        reader = gguf.GGUFReader(str(base))
    except (OSError, ValueError) as exc:
        raise AdapterExportError(f"could not read the base model {base}: {exc}") from None

    def field(key: str):
        f = reader.fields.get(key)
        return None if f is None else f.contents()

    arch = field("general.architecture")
    if not isinstance(arch, str):
        raise AdapterExportError(f"{base} names no general.architecture; is it a model GGUF?")
    blocks = field(f"{arch}.block_count")
    # GGUF lists dimensions innermost first; reversed they are the numpy (out, in) shape.
    shapes = {t.name: tuple(int(d) for d in reversed(t.shape.tolist())) for t in reader.tensors}
    return arch, int(blocks or 0), shapes


def export_lora_gguf(
    adapter_dir: str | Path, out: str | Path, base: str | Path = "embedded"
) -> ExportedAdapter:
    """Write ``adapter_dir`` (a PEFT LoRA folder) as a llama.cpp adapter GGUF at ``out``,
    checked against the base model GGUF ``base`` (``embedded`` / ``embedded:small``: the
    workbench's own models).
    Raises :class:`AdapterExportError` naming the first problem; writes nothing then."""
    import gguf
    import numpy as np

    folder = Path(adapter_dir)
    config, weights = _read_adapter(folder)
    from workbench.llm.weights import embedded_gguf

    base = embedded_gguf(str(base)) or base
    arch, blocks, shapes = _base_tensors(Path(base))
    try:
        arch_id = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch)
    except StopIteration:
        raise AdapterExportError(
            f"the gguf package does not know architecture {arch!r}; upgrade gguf"
        ) from None
    names = gguf.get_tensor_name_map(arch_id, blocks)

    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, value in weights.items():
        m = _PEFT_KEY.match(key)
        if m is None:
            raise AdapterExportError(
                f"{folder}: tensor {key!r} is not a LoRA A/B matrix (modules_to_save or a "
                "trained embedding?); llama.cpp adapters carry LoRA pairs only"
            )
        target = names.get_name(m["module"] + ".weight", try_suffixes=(".weight",))
        if target is None or target not in shapes:
            raise AdapterExportError(
                f"{folder}: module {m['module']!r} has no tensor in the base model {base}; "
                "was the adapter trained on another model?"
            )
        pairs.setdefault(target, {})[m["which"]] = value.astype(np.float32)

    ranks = set()
    for target, ab in sorted(pairs.items()):
        if set(ab) != {"A", "B"}:
            raise AdapterExportError(
                f"{folder}: {target} has lora_{''.join(ab)} only; the adapter is incomplete"
            )
        out_dim, in_dim = shapes[target]
        a, b = ab["A"], ab["B"]
        if a.shape[1] != in_dim or b.shape[0] != out_dim or a.shape[0] != b.shape[1]:
            raise AdapterExportError(
                f"{folder}: {target} is {out_dim}x{in_dim} in the base model but the adapter's "
                f"A is {a.shape[0]}x{a.shape[1]} and B {b.shape[0]}x{b.shape[1]}; train the "
                "adapter on this base model"
            )
        ranks.add(a.shape[0])
    if not pairs:
        raise AdapterExportError(f"{folder}: the adapter holds no LoRA tensors")
    rank = int(config.get("r") or max(ranks))
    alpha = float(config.get("lora_alpha") or rank)
    if ranks != {rank}:
        # llama.cpp scales every tensor by one alpha over its own rank; PEFT's rank_pattern
        # would need a per-tensor alpha, which the adapter format has no key for.
        raise AdapterExportError(f"{folder}: ranks {sorted(ranks)} differ from r={rank}; use one rank")

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    writer = gguf.GGUFWriter(str(tmp), arch)
    writer.add_string(gguf.Keys.General.TYPE, gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for target, ab in sorted(pairs.items()):
        writer.add_tensor(f"{target}.lora_a", np.ascontiguousarray(ab["A"]))
        writer.add_tensor(f"{target}.lora_b", np.ascontiguousarray(ab["B"]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)  # a half-written adapter never carries the final name
    return ExportedAdapter(out, arch, rank, alpha, len(pairs))
