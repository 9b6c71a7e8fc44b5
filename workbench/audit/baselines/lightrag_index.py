"""A LightRAG knowledge-graph index per SKILL, built through the workbench's own model door.

The real ``lightrag-hku`` library does the chunking, entity/relation extraction, gleaning,
merging and vector storage; we only hand it three things so the comparison with SkillCDG is
like for like:

- its LLM is the :class:`~workbench.llm.gateway.Gateway` (role ``extractor``, the model that
  compiles CDGs), so temperature, response cache, record/replay and usage accounting apply;
- its embedder is the dense baseline's encoder (all-MiniLM-L6-v2, 384-d), wrapped async;
- its tokenizer is the product's offline cl100k_base (``workbench.llm.tokens``).

An index lives in ``<root>/<skill>-<key>/`` where the key hashes the SKILL source, the model,
the embedder and the library version: change any of them and a new index is built, never a
stale one reused. Indexing is resumable: LightRAG keeps its own LLM response cache in that
folder, and a document it marked failed is deleted and inserted again (``ainsert`` alone
skips it), so only the calls that never finished are paid again. What indexing cost (calls,
prompt/output tokens, wall time; every run appended) is kept in ``cost.json`` beside it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.audit.baselines.index_store import append_run, booked, run_from_usage
from workbench.audit.baselines.lightrag_presets import LightragPreset, get_preset
from workbench.audit.baselines.skill_indexes import (
    EMBED_DIM,
    ROLE,
    LoopThread,
    SharedLoop,
    SkillIndexes,
)
from workbench.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

INSTALL_HINT = "The lightrag baseline needs the LightRAG library: pip install lightrag-hku==1.5.7"
STEP = "lightrag.index"
# LightRAG splits every chunk to fit its embedder's max_token_size; declaring MiniLM's 256
# would cut the library's 1,200-token chunks into ~6x as many (and 6x the extraction calls).
# Keyword ("hybrid") retrieval searches entity and relation vectors, whose texts are short;
# a chunk's own vector (only used by LightRAG's naive/mix modes) then reads its first 256
# word pieces, as MiniLM truncates. So we declare the chunk size and keep LightRAG's default.
CHUNK_TOKENS = 1200
# LightRAG's shared storage is process-wide: all its work in this process runs on one loop.
LIGHTRAG_LOOP = SharedLoop()


class LightragUnavailable(WorkbenchError, RuntimeError):
    """The LightRAG library is not installed; the message names the fix."""

    fatal = True


class LightragIndexError(WorkbenchError, RuntimeError):
    """LightRAG could not index a SKILL (a model call failed, or its output was unusable)."""


def _lightrag():
    """The library's entry points, imported on first use (it costs seconds to import)."""
    from workbench.llm.tokens import _bundled_cache_dir

    # LightRAG's default tokenizer would download o200k; ours is cl100k, but tiktoken reads
    # this variable when LightRAG builds anything, so point it at litellm's bundled copy.
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_bundled_cache_dir()))
    try:
        import lightrag
        from lightrag import LightRAG, QueryParam
        from lightrag.base import DocStatus
        from lightrag.kg.shared_storage import initialize_pipeline_status
        from lightrag.utils import EmbeddingFunc, Tokenizer
    except ImportError as exc:
        raise LightragUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return {
        "version": getattr(lightrag, "__version__", "?"), "LightRAG": LightRAG,
        "QueryParam": QueryParam, "DocStatus": DocStatus, "EmbeddingFunc": EmbeddingFunc,
        "Tokenizer": Tokenizer, "initialize_pipeline_status": initialize_pipeline_status,
    }


def gateway_llm(gateway: ModelGateway, skill: str, usage: list[Any], keywords: bool = False):
    """LightRAG's ``llm_model_func``: every call goes through the gateway; each call's
    :class:`Usage` is appended to ``usage``. A plain function, not an object holding the
    gateway: LightRAG deep-copies its configuration, and a gateway holds locks.
    ``keywords``: the function of LightRAG's keyword role (its query-time keyword step),
    whose calls are logged as ``lightrag.keywords``."""

    async def complete(prompt: str, system_prompt: str | None = None,
                       history_messages: Sequence[dict[str, Any]] | None = None,
                       keyword_extraction: bool = False, **_: Any) -> str:
        messages: list[dict[str, str]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        for m in history_messages or []:
            messages.append({"role": str(m.get("role")), "content": str(m.get("content", ""))})
        messages.append({"role": "user", "content": prompt})
        step = f"{'lightrag.keywords' if keywords or keyword_extraction else STEP}:{skill}"
        res = await asyncio.to_thread(booked, usage, lambda: gateway.complete_text(
            role=ROLE, messages=messages, step=step))
        return res.text

    return complete


def encoder_embedding(encoder: Any):
    """The dense baseline's encoder as LightRAG's async embedding function."""

    async def embed(texts: list[str], **_: Any):
        return await asyncio.to_thread(encoder.encode, list(texts))

    return embed


class LightragIndexes(SkillIndexes):
    """Opens (building or resuming when needed) one LightRAG index per SKILL and preset
    (``open(skill, source, preset)``; see ``lightrag_presets``); the arguments are
    :class:`~workbench.audit.baselines.skill_indexes.SkillIndexes`'. Every instance runs
    LightRAG on the process's one LightRAG loop (``LIGHTRAG_LOOP``), so any number of
    threads may query at once."""

    library = "lightrag"

    def load_library(self) -> dict[str, Any]:
        return _lightrag()

    def _acquire_loop(self) -> LoopThread:
        return LIGHTRAG_LOOP.acquire()

    def _release_loop(self, loop: LoopThread) -> None:
        LIGHTRAG_LOOP.release(loop)

    def variant_key(self, variant: Any) -> str:
        return get_preset(variant).index_variant

    def _open_index(self, skill: str, source: str, folder: Path, variant: Any = None) -> Any:
        """The SKILL's LightRAG instance for preset ``variant`` (None: the default),
        indexed (built or resumed here when needed).

        Raises LightragIndexError when LightRAG marks the document failed (the index stays
        resumable: run again once the model is reachable).
        """
        return self.run(self._open_async(skill, source, folder, get_preset(variant)))

    async def _open_async(self, skill: str, source: str, folder: Path,
                          preset: LightragPreset) -> Any:
        lib = self.lib
        folder.mkdir(parents=True, exist_ok=True)
        usage: list[Any] = []
        role = self.gateway.config.role(ROLE)
        from workbench.llm.tokens import _encoding

        rag = lib["LightRAG"](
            working_dir=str(folder),
            workspace=_workspace(folder),
            llm_model_func=gateway_llm(self.gateway, skill, usage),
            llm_model_name=self.model,
            llm_model_max_async=max(1, role.concurrency),
            # The gateway owns timeouts and retries; LightRAG's own cut-off (240 s) must not
            # fire first on a slow local model, nor its 30 s embedding one while torch loads.
            default_llm_timeout=int(role.timeout * (role.retries + 1) + 60),
            default_embedding_timeout=600,
            embedding_func=lib["EmbeddingFunc"](
                embedding_dim=EMBED_DIM, max_token_size=preset.chunk_tokens or CHUNK_TOKENS,
                model_name=self.embedder_name, func=encoder_embedding(self.encoder)),
            tokenizer=lib["Tokenizer"]("cl100k_base", _encoding()),
            **preset.lightrag_args(),
            # The paper preset lets LightRAG extract the query's keywords: its keyword role
            # gets a function of its own so those calls are named (and kept out of the
            # index's cost). The default preset passes keywords and leaves the roles alone.
            **({"role_llm_configs": {"keyword": {"func": gateway_llm(
                self.gateway, skill, [], keywords=True)}}} if preset.library_keywords else {}),
        )
        await rag.initialize_storages()
        await lib["initialize_pipeline_status"](workspace=_workspace(folder))
        try:
            status = await self._status(rag, skill)
            if status != lib["DocStatus"].PROCESSED:
                await self._index(rag, usage, skill, source, folder, status)
        except BaseException:
            await rag.finalize_storages()  # flush what was done: the next run resumes from it
            raise
        return rag

    async def _status(self, rag: Any, skill: str) -> Any:
        doc = await rag.doc_status.get_by_id(skill)
        if not doc:
            return None
        status = doc.get("status") if isinstance(doc, dict) else getattr(doc, "status", None)
        return self.lib["DocStatus"](status) if status is not None else None

    async def _index(self, rag, usage: list[Any], skill, source, folder: Path, status) -> None:
        started, t0 = time.time(), time.perf_counter()
        if status is not None:
            # Failed or interrupted: LightRAG's ainsert skips a known document, so delete it
            # and insert again; its response cache answers the calls that had finished.
            await rag.adelete_by_doc_id(skill)
        await rag.ainsert(source, ids=[skill], file_paths=[skill])
        now = await self._status(rag, skill)
        ok = now == self.lib["DocStatus"].PROCESSED
        run = run_from_usage(list(usage), started, time.perf_counter() - t0,
                             str(getattr(now, "value", now)))
        usage.clear()
        append_run(folder, run, skill=skill, source=source, library_version=self.lib["version"],
                   model=self.model, embedder=self.embedder_name)
        if not ok:
            doc = await rag.doc_status.get_by_id(skill) or {}
            why = doc.get("error_msg") or doc.get("error") if isinstance(doc, dict) else ""
            raise LightragIndexError(
                f"LightRAG could not index SKILL {skill!r} (status {run.status}): {why or '?'}",
                "check the extractor model (`workbench model check --role extractor`) and run "
                "again: the index resumes, finished model calls are not paid twice")

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for rag in opened:
            self.run(rag.finalize_storages())
        self.stop_loop()  # the last holder stops the loop; a later open starts afresh


def _workspace(folder: Path) -> str:
    """LightRAG's workspace for an index folder. LightRAG keeps each workspace's storages in
    process-wide shared memory, so two folders must never share a name in one process (two
    roots holding the same SKILL would read each other's data): the name hashes the absolute
    path. Its files live in ``<folder>/<workspace>/``; a moved root is indexed again."""
    return "ws-" + hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:12]

