"""What the two library baselines (LightRAG, GraphRAG) share around their per-SKILL indexes.

Both index each SKILL through the workbench's gateway (role ``extractor``) with the dense
baseline's encoder, keep the index in a folder keyed by source, model, embedder and library
version (``index_store``), and drive the library's coroutines on one event loop of their own.
Only how a library builds, resumes and opens an index differs: that stays in
``lightrag_index`` and ``graphrag_index``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from workbench.audit.baselines.index_store import IndexCost, default_root, index_key, read_cost, slug

ROLE = "extractor"  # same model as CDG extraction: a user choosing a method pays one of them
EMBEDDER = "all-MiniLM-L6-v2"
EMBED_DIM = 384


class LoopThread:
    """One event loop on its own thread: LightRAG's storages belong to the loop that opened
    them, and callers (the runner's threads, Streamlit, Ray) may already run a loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="lightrag-loop")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        # LightRAG refuses a workspace whose objects belong to a loop still open, and leaves
        # worker tasks waiting on queues: cancel them, then close the loop.
        async def cancel_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        self.run(cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class SkillIndexes:
    """The common part of ``LightragIndexes`` and ``GraphragIndexes``.

    ``gateway``: a Gateway (None: ``Gateway.from_env()`` on first need); ``encoder``: anything
    with ``encode(texts) -> (n, 384) unit vectors`` (None: the dense baseline's encoder);
    ``root``: where indexes live (default ``.workbench/baselines/<library>`` or
    ``$WORKBENCH_BASELINES_DIR/<library>``). A subclass names ``library`` (its folder under
    the baselines root) and how to ``load_library`` (its entry points, with ``version``).
    """

    library: str

    def load_library(self) -> dict[str, Any]:
        raise NotImplementedError

    def __init__(self, gateway: Any = None, encoder: Any = None,
                 root: str | os.PathLike[str] | None = None, embedder_name: str = EMBEDDER) -> None:
        # First: a missing library must fail here, naming its install, before anything else.
        self.lib = self.load_library()
        self._gateway = gateway
        self._encoder = encoder
        self.embedder_name = embedder_name
        self.root = Path(root) if root is not None else default_root(self.library)
        self._loop = LoopThread()
        self._open: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def gateway(self) -> Any:
        if self._gateway is None:
            from workbench.llm.gateway import Gateway

            self._gateway = Gateway.from_env()
        return self._gateway

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from workbench.audit.dense import default_encoder

            self._encoder = default_encoder()
        return self._encoder

    @property
    def model(self) -> str:
        from workbench.llm.transport import key_model

        return key_model(self.gateway.config.role(ROLE))

    def folder(self, skill: str, source: str) -> Path:
        key = index_key(source, self.model, self.embedder_name, self.lib["version"])
        return self.root / f"{slug(skill)}-{key}"

    def cost(self, skill: str, source: str) -> IndexCost | None:
        return read_cost(self.folder(skill, source))

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self._loop.run(coro)

    def open(self, skill: str, source: str) -> Any:
        """The SKILL's index, opened once per folder by the subclass's ``_open_index``
        (built or resumed when needed)."""
        folder = self.folder(skill, source)
        with self._lock:
            if str(folder) not in self._open:
                self._open[str(folder)] = self._open_index(skill, source, folder)
            return self._open[str(folder)]


class IndexedRetriever:
    """A baseline retriever over its library's indexes, made on first need when none is
    given (``indexes_class``: the subclass's index type)."""

    indexes_class: type

    def __init__(self, indexes: Any = None) -> None:
        self._indexes = indexes

    @property
    def indexes(self) -> Any:
        if self._indexes is None:
            self._indexes = self.indexes_class()
        return self._indexes
