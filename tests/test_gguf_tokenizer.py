"""The GGUF header reader and the BPE tokenizer rebuilt from it, on hand-made GGUF files."""

from __future__ import annotations

import struct

import pytest

from workbench.llm.gguf_tokenizer import GgufTokenizerError, read_tokenizer_metadata, tokenizer_from_gguf


def _str(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _kv_string(key: str, value: str) -> bytes:
    return _str(key) + struct.pack("<I", 8) + _str(value)


def _kv_strings(key: str, values: list[str]) -> bytes:
    return _str(key) + struct.pack("<IIQ", 9, 8, len(values)) + b"".join(_str(v) for v in values)


def _kv_floats(key: str, values: list[float]) -> bytes:
    return _str(key) + struct.pack("<IIQ", 9, 6, len(values)) + struct.pack(f"<{len(values)}f", *values)


def _gguf(path, pairs: list[bytes], magic: bytes = b"GGUF") -> None:
    path.write_bytes(magic + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs))


# Byte-level BPE: "Ġ" is the space byte. Merges build "ab" and "Ġab".
TOKENS = ["a", "b", "Ġ", "ab", "Ġab"]
MERGES = ["a b", "Ġ ab"]


def _tiny(path, model="gpt2", pre="qwen2"):
    _gguf(path, [
        _kv_string("general.name", "tiny"),
        _kv_string("tokenizer.ggml.model", model),
        _kv_string("tokenizer.ggml.pre", pre),
        _kv_strings("tokenizer.ggml.tokens", TOKENS),
        _kv_floats("tokenizer.ggml.scores", [0.0] * len(TOKENS)),  # skipped unread
        _kv_strings("tokenizer.ggml.merges", MERGES),
    ])


def test_header_keys_are_read_across_split_parts(tmp_path):
    whole = tmp_path / "tiny.gguf"
    _tiny(whole)
    data = whole.read_bytes()
    # the weights ship as slices: cut the file mid-string and read the parts in order
    parts = [tmp_path / "p1", tmp_path / "p2", tmp_path / "p3"]
    parts[0].write_bytes(data[:37])
    parts[1].write_bytes(data[37:90])
    parts[2].write_bytes(data[90:])
    meta = read_tokenizer_metadata(parts, ["tokenizer.ggml.tokens", "tokenizer.ggml.pre"])
    assert meta == {"tokenizer.ggml.tokens": TOKENS, "tokenizer.ggml.pre": "qwen2"}


def test_tokenizer_applies_the_merges(tmp_path):
    path = tmp_path / "tiny.gguf"
    _tiny(path)
    tok = tokenizer_from_gguf([path])
    # "ab ab" splits (qwen2 pattern) into "ab" and " ab" -> ids 3 and 4
    assert tok.encode("ab ab", add_special_tokens=False).ids == [3, 4]
    assert tok.encode("ba", add_special_tokens=False).ids == [1, 0]  # no merge "b a"


def test_unsupported_or_broken_files_are_named(tmp_path):
    path = tmp_path / "llama.gguf"
    _tiny(path, model="llama", pre="default")
    with pytest.raises(GgufTokenizerError, match="model='llama', pre='default'.*cl100k"):
        tokenizer_from_gguf([path])
    bad = tmp_path / "bad.gguf"
    _gguf(bad, [], magic=b"GGML")
    with pytest.raises(GgufTokenizerError, match="not a GGUF file"):
        read_tokenizer_metadata([bad], [])
    short = tmp_path / "short.gguf"
    _tiny(short)
    short.write_bytes(short.read_bytes()[:50])
    with pytest.raises(GgufTokenizerError, match="ended inside its header"):
        read_tokenizer_metadata([short], ["tokenizer.ggml.tokens"])
