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
from typing import TYPE_CHECKING, Any

from workbench.audit.baselines.index_store import IndexCost, default_root, index_key, read_cost, slug
from workbench.vocabulary import ModelRole

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

ROLE = ModelRole.EXTRACTOR  # same model as CDG extraction: a user choosing a method pays one of them
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


class SharedLoop:
    """One :class:`LoopThread` for every holder in this process, started by the first
    ``acquire`` and stopped by the last ``release``.

    LightRAG keeps its storages, keyed locks and pipeline queues in process-wide shared
    memory (``lightrag.kg.shared_storage``): an ``asyncio.Lock`` there binds to the first
    loop that waits on it, so two loops driving LightRAG in one process at the same time
    fail with "Lock ... is bound to a different event loop" (and the pipeline then waits
    forever on the halted worker). Every LightRAG index of the process therefore runs on
    this one loop, whichever thread (runner worker, Streamlit session) asks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._holders = 0

    def acquire(self) -> LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = LoopThread()
            self._holders += 1
            return self._loop

    def release(self, loop: LoopThread) -> None:
        with self._lock:
            if loop is not self._loop:
                return  # already stopped (a holder released twice)
            self._holders -= 1
            if self._holders > 0:
                return
            self._loop = None
        loop.stop()

    @property
    def holders(self) -> int:
        return self._holders


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

    def __init__(self, gateway: ModelGateway | None = None, encoder: Any = None,
                 root: str | os.PathLike[str] | None = None, embedder_name: str = EMBEDDER) -> None:
        # First: a missing library must fail here, naming its install, before anything else.
        self.lib = self.load_library()
        self._gateway = gateway
        self._encoder = encoder
        self.embedder_name = embedder_name
        self.root = Path(root) if root is not None else default_root(self.library)
        self._loop: LoopThread | None = None  # started on first use, stopped by close
        self._loop_lock = threading.Lock()
        self._open: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _acquire_loop(self) -> LoopThread:
        """The loop this instance's coroutines run on (default: one of its own)."""
        return LoopThread()

    def _release_loop(self, loop: LoopThread) -> None:
        loop.stop()

    @property
    def gateway(self) -> ModelGateway:
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

    def variant_key(self, variant: Any) -> str:
        """What of an index ``variant`` (e.g. a LightRAG preset) changes the index built,
        as text for its folder key; "" when nothing does (the key is then as before)."""
        return ""

    def folder(self, skill: str, source: str, variant: Any = None) -> Path:
        extra = self.variant_key(variant)
        embedder = f"{self.embedder_name}|{extra}" if extra else self.embedder_name
        key = index_key(source, self.model, embedder, self.lib["version"])
        return self.root / f"{slug(skill)}-{key}"

    def cost(self, skill: str, source: str, variant: Any = None) -> IndexCost | None:
        return read_cost(self.folder(skill, source, variant))

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        with self._loop_lock:
            if self._loop is None:
                self._loop = self._acquire_loop()
            loop = self._loop
        return loop.run(coro)

    def stop_loop(self) -> None:
        """Stop (or let go of) this instance's loop; a later ``run`` starts afresh."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            self._release_loop(loop)

    def open(self, skill: str, source: str, variant: Any = None) -> Any:
        """The SKILL's index, opened once per folder by the subclass's ``_open_index``
        (built or resumed when needed; ``variant``: see ``variant_key``)."""
        folder = self.folder(skill, source, variant)
        with self._lock:
            if str(folder) not in self._open:
                self._open[str(folder)] = self._open_index(skill, source, folder, variant)
            return self._open[str(folder)]


class IndexedRetriever:
    """A baseline retriever over its library's indexes, made on first need when none is
    given (``indexes_class``: the subclass's index type)."""

    indexes_class: type

    def __init__(self, indexes: Any = None) -> None:
        self._indexes = indexes
        self._made = threading.Lock()

    @property
    def indexes(self) -> Any:
        # Under a lock: the runner's worker threads ask at once, and two instances would
        # index the same SKILL twice.
        with self._made:
            if self._indexes is None:
                self._indexes = self.indexes_class()
            return self._indexes
