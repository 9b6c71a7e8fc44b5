"""A PEFT LoRA adapter written as a llama.cpp adapter GGUF: names mapped to the base model's
tensors, A and B carried unchanged, alpha recorded, and a mismatched base refused before
anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from workbench.train.export import AdapterExportError, export_lora_gguf  # noqa: E402
from workbench.train.models import LoraSettings, with_lora  # noqa: E402

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 32, 64, 2, 2, 1
# (HF module, GGUF tensor, numpy shape (out, in)) for one Qwen2 block.
HEAD_DIM = HIDDEN // HEADS
MODULES = [
    ("self_attn.q_proj", "attn_q", (HIDDEN, HIDDEN)),
    ("self_attn.k_proj", "attn_k", (KV_HEADS * HEAD_DIM, HIDDEN)),
    ("self_attn.v_proj", "attn_v", (KV_HEADS * HEAD_DIM, HIDDEN)),
    ("self_attn.o_proj", "attn_output", (HIDDEN, HIDDEN)),
    ("mlp.gate_proj", "ffn_gate", (FFN, HIDDEN)),
    ("mlp.up_proj", "ffn_up", (FFN, HIDDEN)),
    ("mlp.down_proj", "ffn_down", (HIDDEN, FFN)),
]


def _adapter(path: Path, rank: int = 4) -> dict[str, np.ndarray]:
    """A tiny Qwen2 model with a LoRA whose B is non-zero (PEFT starts B at zero)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(3)
    config = Qwen2Config(vocab_size=64, hidden_size=HIDDEN, intermediate_size=FFN,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS, tie_word_embeddings=True)
    model = with_lora(Qwen2ForCausalLM(config), LoraSettings(rank=rank, alpha=2 * rank))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_()
    model.save_pretrained(str(path))
    from safetensors.numpy import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def _base(path: Path, hidden: int = HIDDEN) -> Path:
    """A base-model GGUF with the tensors (zeros) and metadata the export checks against."""
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(LAYERS)
    for i in range(LAYERS):
        for _, short, (out, inp) in MODULES:
            scale = hidden / HIDDEN
            shape = (int(out * scale), int(inp * scale))
            w.add_tensor(f"blk.{i}.{short}.weight", np.zeros(shape, np.float32))
    w.add_tensor("token_embd.weight", np.zeros((64, hidden), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_export_maps_every_lora_pair_onto_its_base_tensor_unchanged(tmp_path):
    weights = _adapter(tmp_path / "adapter")
    out = tmp_path / "keyworder.gguf"
    done = export_lora_gguf(tmp_path / "adapter", out, base=_base(tmp_path / "base.gguf"))
    assert (done.rank, done.alpha, done.architecture) == (4, 8.0, "qwen2")
    assert done.tensors == LAYERS * len(MODULES)

    reader = gguf.GGUFReader(str(out))
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["adapter.type"].contents() == "lora"
    assert reader.fields["adapter.lora.alpha"].contents() == pytest.approx(8.0)
    assert reader.fields["general.architecture"].contents() == "qwen2"
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    assert len(tensors) == 2 * LAYERS * len(MODULES)
    for i in range(LAYERS):
        for hf, short, (out_dim, in_dim) in MODULES:
            a = tensors[f"blk.{i}.{short}.weight.lora_a"]
            b = tensors[f"blk.{i}.{short}.weight.lora_b"]
            # llama.cpp's checks: a is (rank, in), b is (out, rank) in numpy order
            assert a.shape == (4, in_dim) and b.shape == (out_dim, 4)
            key = f"base_model.model.model.layers.{i}.{hf}"
            np.testing.assert_array_equal(a, weights[f"{key}.lora_A.weight"])
            np.testing.assert_array_equal(b, weights[f"{key}.lora_B.weight"])
    assert not list(tmp_path.glob("*.part"))


def test_an_adapter_for_another_model_is_refused_and_nothing_is_written(tmp_path):
    _adapter(tmp_path / "adapter")
    out = tmp_path / "keyworder.gguf"
    wrong = r"blk\.0\.attn_k\.weight is 32x64 in the base model.*train the adapter on this base"
    with pytest.raises(AdapterExportError, match=wrong):
        export_lora_gguf(tmp_path / "adapter", out, base=_base(tmp_path / "wide.gguf", hidden=2 * HIDDEN))
    assert not out.exists()


def test_dora_and_non_adapter_folders_are_refused_with_the_fix(tmp_path):
    with pytest.raises(AdapterExportError, match="not a PEFT adapter folder"):
        export_lora_gguf(tmp_path, tmp_path / "x.gguf", base=tmp_path / "none.gguf")
    _adapter(tmp_path / "adapter")
    cfg = tmp_path / "adapter" / "adapter_config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "use_dora": True}))
    with pytest.raises(AdapterExportError, match="use_dora adapters have no llama.cpp equivalent"):
        export_lora_gguf(tmp_path / "adapter", tmp_path / "x.gguf", base=_base(tmp_path / "base.gguf"))


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_llama_cpp_serves_the_embedded_model_with_an_exported_adapter(tmp_path):
    """The real base and server: an adapter whose B is zero answers exactly as the base
    model; a large random one changes the answer; each server is named by its adapter."""
    import urllib.request

    from safetensors.numpy import save_file

    from workbench.llm.config import EmbeddedConfig
    from workbench.llm.embedded import EmbeddedServer, adapter_alias
    from workbench.llm.weights import MODEL_ALIAS, assembled_path
    from workbench.train.export import _base_tensors

    _, _, shapes = _base_tensors(assembled_path())
    rng = np.random.default_rng(0)

    def adapter(name: str, b_scale: float) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        weights = {}
        for hf, short, _ in MODULES:
            out_dim, in_dim = shapes[f"blk.27.{short}.weight"]
            key = f"base_model.model.model.layers.27.{hf}"
            weights[f"{key}.lora_A.weight"] = rng.normal(size=(4, in_dim)).astype(np.float32)
            weights[f"{key}.lora_B.weight"] = (b_scale * rng.normal(size=(out_dim, 4))).astype(np.float32)
        save_file(weights, str(folder / "adapter_model.safetensors"))
        (folder / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8}))
        return export_lora_gguf(folder, tmp_path / f"{name}.gguf").path

    def answer(path: Path | None) -> tuple[str, str]:
        server = EmbeddedServer(EmbeddedConfig(ctx_size=2048, parallel=1), adapter=path)
        info = server.start()
        try:
            body = json.dumps({"model": info.alias, "temperature": 0, "max_tokens": 12, "messages": [
                {"role": "user", "content": "Name three colours of the rainbow."}]}).encode()
            req = urllib.request.Request(f"{info.url}/v1/chat/completions", body,
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as resp:
                return info.alias, json.loads(resp.read())["choices"][0]["message"]["content"]
        finally:
            server.stop()

    zero, noisy = adapter("zero", 0.0), adapter("noisy", 0.5)
    base_alias, base = answer(None)
    zero_alias, same = answer(zero)
    noisy_alias, changed = answer(noisy)
    assert base_alias == MODEL_ALIAS and zero_alias == adapter_alias(zero) != noisy_alias
    assert same == base
    assert changed != base
