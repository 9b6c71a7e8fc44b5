"""The embedded model's own tokenizer, rebuilt offline from the metadata of its GGUF file.

A GGUF file starts with a key/value header; for a BPE model it holds the vocabulary
(``tokenizer.ggml.tokens``), the merge list (``tokenizer.ggml.merges``) and the
pre-tokenizer name (``tokenizer.ggml.pre``). We read only that header (never the tensors),
straight from the installed weight parts, so counting with the model's tokenizer needs
neither the assembled 1 GB file nor the ``gguf`` package nor a network connection.

Supported: byte-level BPE models with the ``qwen2`` pre-tokenizer (the embedded
Qwen2.5-Coder). Anything else raises :class:`GgufTokenizerError` naming what was found.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from workbench.errors import WorkbenchError

# GGUF value types (gguf spec v3) and the struct format of the fixed-size ones.
_SCALAR = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"
}
_STRING, _ARRAY = 8, 9

# The split pattern llama.cpp and Hugging Face use for the "qwen2" pre-tokenizer.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class GgufTokenizerError(WorkbenchError, RuntimeError):
    """The GGUF header could not be read or describes a tokenizer we cannot rebuild."""


class _ChainedParts:
    """Read sequentially across the weight part files as if they were one file."""

    def __init__(self, paths: Sequence[Path]):
        self._paths = list(paths)
        self._fh: BinaryIO | None = None

    def read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            if self._fh is None:
                if not self._paths:
                    raise GgufTokenizerError(
                        "the GGUF file ended inside its header; the weights are truncated"
                    )
                self._fh = open(self._paths.pop(0), "rb")  # noqa: SIM115 - closed when exhausted
            chunk = self._fh.read(n - len(out))
            if not chunk:
                self._fh.close()
                self._fh = None
                continue
            out += chunk
        return bytes(out)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def _unpack(stream: _ChainedParts, fmt: str):
    return struct.unpack(fmt, stream.read(struct.calcsize(fmt)))[0]


def _string(stream: _ChainedParts) -> str:
    return stream.read(_unpack(stream, "<Q")).decode("utf-8", errors="replace")


def _value(stream: _ChainedParts, kind: int, keep: bool):
    if kind in _SCALAR:
        return _unpack(stream, _SCALAR[kind])
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        item_kind, count = _unpack(stream, "<I"), _unpack(stream, "<Q")
        if not keep and item_kind in _SCALAR:  # skip big numeric arrays (scores, types) unread
            stream.read(struct.calcsize(_SCALAR[item_kind]) * count)
            return None
        return [_value(stream, item_kind, keep) for _ in range(count)]
    raise GgufTokenizerError(f"unknown GGUF value type {kind}; the file is corrupt or newer than spec v3")


def read_tokenizer_metadata(paths: Iterable[Path], keys: Iterable[str]) -> dict:
    """The requested keys of a GGUF header (``paths``: the file, or its parts in order)."""
    wanted = set(keys)
    stream = _ChainedParts(list(paths))
    try:
        if stream.read(4) != b"GGUF":
            raise GgufTokenizerError("not a GGUF file (magic bytes differ)")
        version = _unpack(stream, "<I")
        if version < 2:
            raise GgufTokenizerError(f"GGUF version {version} is too old (need 2 or later)")
        _unpack(stream, "<Q")  # tensor count: the tensors are never read
        found: dict = {}
        for _ in range(_unpack(stream, "<Q")):
            key = _string(stream)
            kind = _unpack(stream, "<I")
            value = _value(stream, kind, keep=key in wanted)
            if key in wanted:
                found[key] = value
        return found
    finally:
        stream.close()


def tokenizer_from_gguf(paths: Iterable[Path]):
    """A ``tokenizers.Tokenizer`` equal to the model's own (byte-level BPE, qwen2 split)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    keys = ["model", "pre", "tokens", "merges"]
    meta = read_tokenizer_metadata(paths, [f"tokenizer.ggml.{k}" for k in keys])
    model, pre = meta.get("tokenizer.ggml.model"), meta.get("tokenizer.ggml.pre")
    if model != "gpt2" or pre != "qwen2":
        raise GgufTokenizerError(
            f"the GGUF tokenizer is model={model!r}, pre={pre!r}; only byte-level BPE with the "
            "qwen2 pre-tokenizer is supported. Use the cl100k tokenizer instead."
        )
    tokens, merges = meta.get("tokenizer.ggml.tokens"), meta.get("tokenizer.ggml.merges")
    if not tokens or not merges:
        raise GgufTokenizerError("the GGUF header has no vocabulary or merge list")
    vocab = {tok: i for i, tok in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    return tok
