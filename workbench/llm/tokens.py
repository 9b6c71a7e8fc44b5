"""One tokenizer for every token count in the product (rule density, budgets, reports).

We use tiktoken's ``cl100k_base`` encoding from the copy litellm ships inside its wheel, so
counting never touches the network (plain tiktoken would download the encoding on first use)
and never imports litellm itself (which costs seconds at start-up). Counts are a stable
yardstick for comparing documents and contexts; a served model's own tokenizer may differ by
a few percent, and the gateway reports that model's exact usage separately.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path

from workbench.errors import WorkbenchError

ENCODING = "cl100k_base"


class TokenizerUnavailable(WorkbenchError, RuntimeError):
    """The bundled encoding could not be found: the install is incomplete."""


def _bundled_cache_dir() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailable(
            "litellm is not installed, and its bundled tokenizer files are what token counting "
            "uses offline. Install the project: `make install` (or `pip install -e .`)."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    cache = _bundled_cache_dir()
    if not cache.is_dir():
        raise TokenizerUnavailable(f"bundled tokenizer folder {cache} is missing; reinstall litellm")
    # tiktoken reads its cache folder from the environment at call time.
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding(ENCODING)
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def count_tokens(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    # encode_ordinary: special-token text counted as plain text, as encode(...,
    # disallowed_special=()) does, without its per-call special-token checks.
    return len(_encoding().encode_ordinary(text))


# The longest cl100k_base token, in bytes (tests/test_tokens.py reads it off the vocabulary).
LONGEST_TOKEN_BYTES = 128


def longest_token_bytes() -> int:
    """The longest token of the vocabulary in bytes, read off it (slow: for the test)."""
    enc = _encoding()
    special = {enc.encode_single_token(t) for t in enc.special_tokens_set}
    longest = 0
    for i in range(enc.n_vocab):
        if i in special:
            continue
        try:
            longest = max(longest, len(enc.decode_single_token_bytes(i)))
        except KeyError:  # an unused id between the ordinary and the special tokens
            continue
    return longest


def count_tokens_upto(text: str, limit: int) -> int:
    """``count_tokens(text)``, or ``limit + 1`` without counting when ``text`` surely has more
    than ``limit`` tokens: no token is longer than the vocabulary's longest (in bytes, so in
    characters too), so a text longer than ``limit`` times that has more than ``limit``.
    Counting one 10 MB line took longer than counting its sentences one by one."""
    if len(text) > limit * LONGEST_TOKEN_BYTES:
        return limit + 1
    return count_tokens(text)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` with at most ``limit`` tokens (for previews only)."""
    enc = _encoding()
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= limit else enc.decode(ids[:limit])


# Tokenizers a report can count with, by name. cl100k is the product-wide yardstick; the
# embedded model's own tokenizer (rebuilt from its GGUF header) measures what that model sees.
CL100K = "cl100k"
EMBEDDED = "embedded"
TOKENIZERS: dict[str, str] = {
    CL100K: "tiktoken cl100k_base (offline copy)",
    EMBEDDED: "Qwen2.5-Coder-1.5B's own BPE, from its GGUF header",
}
DEFAULT_TOKENIZER = CL100K


@lru_cache(maxsize=1)
def _embedded_tokenizer():
    from workbench.llm.gguf_tokenizer import tokenizer_from_gguf
    from workbench.llm.weights import installed_parts

    return tokenizer_from_gguf(installed_parts())


def token_counter(name: str = DEFAULT_TOKENIZER):
    """A ``text -> int`` counter for the tokenizer called ``name`` (one of :data:`TOKENIZERS`).

    Raises ``ValueError`` for an unknown name; the embedded tokenizer raises
    ``EmbeddedModelUnavailable`` when the model's weight wheels are not installed.
    """
    if name == CL100K:
        return count_tokens
    if name == EMBEDDED:
        tok = _embedded_tokenizer()
        return lambda text: len(tok.encode(text, add_special_tokens=False).ids) if text else 0
    raise ValueError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}")
