"""Response cache: the contract, the request key, and an in-memory implementation.

The key is the sha256 of the whole request in canonical JSON (sorted keys, no whitespace):
model, messages, schema (as ``response_format``), temperature, max_tokens and seed. Where
the request is sent (``api_base``), how long we wait and how often we retry are not part of
it, so a cached or recorded answer is found again whichever port the server runs on.
The persistent implementation lives in ``store.llm_cache.SqlResponseCache``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from workbench.llm.usage import Usage


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Mapping[str, Any]) -> str:
    """Hex sha256 of the canonical request. Equal requests give equal keys, in any dict order."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """An accepted (parsed and validated) answer to a request, with its original cost."""

    key: str
    request: Mapping[str, Any]
    text: str
    model: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost_usd: float | None
    logprobs: list[Any] | None = None  # the answer's token log-probabilities, when asked for

    @classmethod
    def answered(cls, key: str, request: Mapping[str, Any], text: str, usage: Usage,
                 logprobs: list[Any] | None = None) -> CachedResponse:
        """The entry for an accepted answer, keeping what its call cost (``usage``)."""
        return cls(key=key, request=request, text=text, model=usage.model, role=usage.role,
                   prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                   latency_ms=usage.latency_ms, cost_usd=usage.cost_usd, logprobs=logprobs)


@runtime_checkable
class ResponseCache(Protocol):
    """What the gateway needs from a cache. Implementations must be thread-safe."""

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, entry: CachedResponse) -> None: ...


class MemoryResponseCache:
    """A dict-backed cache for one process (tests, benchmarks, notebooks)."""

    def __init__(self) -> None:
        self._entries: dict[str, CachedResponse] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, entry: CachedResponse) -> None:
        with self._lock:
            self._entries[entry.key] = entry

    def __len__(self) -> int:
        return len(self._entries)
