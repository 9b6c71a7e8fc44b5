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
