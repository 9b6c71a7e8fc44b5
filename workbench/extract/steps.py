"""Stored step results, so extraction is resumable and incremental.

Every extraction and fusion answer is stored under a key that hashes everything the answer
depends on: the step kind, the block text (or the fusion request), the model and its
settings, and the prompt version. A re-run finds every finished step and asks the model only
for what changed; a crash loses at most the steps that were in flight.

``StepStore`` is the contract; :class:`JsonStepStore` keeps one JSON file per step in a folder
(written atomically), :class:`MemoryStepStore` serves tests, and ``store.extraction.SqlStepStore``
keeps them in the workbench database.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from workbench.llm.cache import request_key


def step_key(kind: str, **parts: Any) -> str:
    """The sha256 of ``kind`` and ``parts`` in canonical JSON (as a model request is keyed)."""
    return request_key({"kind": kind, **parts})


@runtime_checkable
class StepStore(Protocol):
    """Where step results live. ``value`` is a JSON-able dict; ``put`` overwrites."""

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, kind: str, value: dict) -> None: ...


class MemoryStepStore:
    def __init__(self) -> None:
        self.data: dict[str, dict] = {}
        self.kinds: dict[str, str] = {}

    def get(self, key: str) -> dict | None:
        value = self.data.get(key)
        return None if value is None else json.loads(json.dumps(value))

    def put(self, key: str, kind: str, value: dict) -> None:
        self.data[key] = json.loads(json.dumps(value))
        self.kinds[key] = kind

    def __len__(self) -> int:
        return len(self.data)


class JsonStepStore:
    """One ``<folder>/<key[:2]>/<key>.json`` per step. A damaged file (a crash mid-write on
    a filesystem without atomic rename) reads as missing, so the step is simply redone."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"step keys are lowercase hex digests, got {key!r}")
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            record = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        value = record.get("value") if isinstance(record, dict) else None
        return value if isinstance(value, dict) else None

    def put(self, key: str, kind: str, value: dict) -> None:
        path = self._path(key)
        text = json.dumps({"key": key, "kind": kind, "value": value}, ensure_ascii=False)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("??/*.json")) if self.folder.is_dir() else 0
