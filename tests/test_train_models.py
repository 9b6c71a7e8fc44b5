"""Where training models come from: folders, GGUF files, the embedded model."""

from __future__ import annotations

import pytest

from workbench.llm.weights import cache_dir, default_spec
from workbench.train.models import ModelLoadError, _source, load_model


def test_sources(tmp_path):
    assert _source(tmp_path) == (str(tmp_path), {})
    gguf = tmp_path / "m.gguf"
    with pytest.raises(ModelLoadError, match="no such GGUF file"):
        _source(gguf)
    gguf.write_bytes(b"")
    assert _source(gguf) == (str(tmp_path), {"gguf_file": "m.gguf"})


def test_both_embedded_models_resolve_to_their_own_gguf(tmp_path, monkeypatch):
    # `train opd --teacher embedded --student embedded:small`: each name is its own GGUF file,
    # read (and dequantised) by transformers from the model cache.
    import workbench.llm.weights as weights

    asked = []

    def fake_assembled(directory=None, spec=None, *, progress=None, model="default"):
        asked.append(model)
        path = tmp_path / weights.embedded_model(model).filename
        path.write_bytes(b"GGUF")
        return path

    monkeypatch.setattr(weights, "assembled_path", fake_assembled)
    assert _source("embedded") == (str(tmp_path), {"gguf_file": weights.DEFAULT.filename})
    assert _source("embedded:small") == (str(tmp_path), {"gguf_file": weights.SMALL.filename})
    assert asked == ["default", "small"]
    with pytest.raises(ModelLoadError, match="unknown embedded model 'tiny'.*small"):
        _source("embedded:tiny")


def test_a_folder_without_a_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="could not load a causal LM"):
        load_model(tmp_path, trainable=False)


@pytest.mark.slow
def test_the_embedded_gguf_tokenizer_loads_with_its_chat_template():
    # Only the tokenizer (about 45 s on a busy 2-core machine): the 1.5B weights would need
    # ~6 GB dequantised. Skipped where the model has not been assembled yet.
    path = cache_dir() / default_spec().filename
    if not path.is_file():
        pytest.skip("the embedded model is not assembled (workbench model check does it)")
    from transformers import AutoTokenizer

    where, extra = _source(path)
    tok = AutoTokenizer.from_pretrained(where, **extra)
    assert tok.eos_token == "<|im_end|>" and tok.chat_template


@pytest.mark.slow
@pytest.mark.model
def test_transformers_reads_one_vocabulary_from_both_embedded_ggufs():
    # What `train opd --teacher embedded --student embedded:small` compares before it starts:
    # the tokenizers transformers builds from the two GGUF files (about 45 s each on a busy
    # 2-core machine; only the tokenizers, not the weights).
    from transformers import AutoTokenizer

    from workbench.llm.weights import assembled_path

    toks = []
    for model in ("default", "small"):
        where, extra = _source(assembled_path(model=model))
        toks.append(AutoTokenizer.from_pretrained(where, **extra))
    assert toks[0].get_vocab() == toks[1].get_vocab() and len(toks[0]) >= 151_936
    assert toks[0].eos_token == toks[1].eos_token == "<|im_end|>"


def _tiny_qwen2(layers: int = 3):
    torch = pytest.importorskip("torch")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(5)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=layers, num_attention_heads=2,
                                        num_key_value_heads=1, tie_word_embeddings=True))


def test_lora_on_the_last_layers_trains_only_those_and_leaves_the_head_alone():
    pytest.importorskip("peft")
    from workbench.train.models import LoraSettings, lora_targets, with_lora

    assert lora_targets(_tiny_qwen2(), 0) == "all-linear"
    model = with_lora(_tiny_qwen2(), LoraSettings(rank=2, alpha=4, layers=2))
    trained = {n.split(".layers.")[1].split(".")[0] for n, p in model.named_parameters() if p.requires_grad}
    assert trained == {"1", "2"}  # of layers 0, 1, 2
    per_layer = [n for n, p in model.named_parameters() if p.requires_grad and ".layers.2." in n]
    assert len(per_layer) == 2 * 7  # A and B for q, k, v, o, gate, up, down
    with pytest.raises(ModelLoadError, match="--lora-layers 4 but the model has 3 layers"):
        lora_targets(_tiny_qwen2(), 4)


def test_completion_logits_are_the_full_logits_at_the_completion_positions():
    torch = pytest.importorskip("torch")
    from workbench.train.models import Samples, completion_logits

    model = _tiny_qwen2().eval()
    seq = torch.tensor([[0, 7, 8, 9, 3, 4], [5, 6, 7, 8, 1, 2]])
    att = torch.tensor([[0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]])
    s = Samples(seq, att, 4, seq[:, 4:], att[:, 4:].bool(), ["", ""])
    with torch.no_grad():
        got = completion_logits(model, s)
        pos = (att.cumsum(dim=1) - 1).clamp(min=0)
        full = model(input_ids=seq, attention_mask=att, position_ids=pos).logits
    assert got.shape == (2, 2, 50)
    torch.testing.assert_close(got, full[:, 3:5, :])


def test_bfloat16_on_a_cpu_without_native_bf16_is_flagged_as_slow(tmp_path):
    # Measured: on an AVX2-only CPU a 512-token linear layer ran 4.8x slower in bfloat16 than
    # in float32, so a run asked for in bf16 there says so before it spends an hour.
    from workbench.train.models import cpu_flags, slow_bfloat16_warning

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    avx2 = cpu_flags(cpuinfo)
    assert avx2 == {"fpu", "sse2", "avx", "avx2", "fma"}
    message = slow_bfloat16_warning("bfloat16", avx2, cuda=False)
    assert message and "--dtype float32" in message
    # native bf16, a GPU, float32 itself, or flags unknown (not Linux): nothing to say
    assert slow_bfloat16_warning("bfloat16", avx2 | {"avx512_bf16"}, cuda=False) is None
    assert slow_bfloat16_warning("bfloat16", avx2 | {"amx_bf16"}, cuda=False) is None
    assert slow_bfloat16_warning("bfloat16", avx2, cuda=True) is None
    assert slow_bfloat16_warning("float32", avx2, cuda=False) is None
    assert slow_bfloat16_warning("bfloat16", None, cuda=False) is None
    assert cpu_flags(tmp_path / "missing") is None


def test_loading_in_bfloat16_on_such_a_cpu_warns_before_it_loads(tmp_path, monkeypatch):
    import torch

    import workbench.llm.transformers_load as loading

    monkeypatch.setattr(loading, "cpu_flags", lambda *a: {"avx", "avx2"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="--dtype float32"), \
            pytest.raises(ModelLoadError, match="could not load a causal LM"):
        load_model(tmp_path, trainable=False, dtype="bfloat16")
