"""A Microsoft GraphRAG index per SKILL, built through the workbench's own model door.

The real ``graphrag`` library (3.3.0) runs its ``standard`` indexing pipeline: chunking,
entity/relation extraction with gleaning, description summaries, Leiden communities and one
community report each, and the vector store of entity descriptions. We hand it two model
classes, registered with ``graphrag_llm`` under a name of their own, so the comparison with
SkillCDG is like for like:

- completions go through the :class:`~workbench.llm.gateway.Gateway` (role ``extractor``,
  the model that compiles CDGs), so temperature, response cache, record/replay and usage
  accounting apply; a call that asks for a structured answer (community reports) is a JSON
  call with the pydantic model's schema;
- embeddings are the dense baseline's encoder (all-MiniLM-L6-v2, 384-d).

GraphRAG is an optional overlay (it pins litellm and pyarrow apart from our lock; see
``requirements-graphrag.txt``): without it, :class:`GraphragUnavailable` names the install.

An index lives in ``<root>/<skill>-<key>/`` (``index_store``: the key hashes source, model,
embedder and library version) as a GraphRAG project: ``settings.yaml``, ``input/``,
``output/`` (parquet tables, lancedb) and ``cache/``. Indexing is resumable: GraphRAG's JSON
cache keeps every finished model call, so a rerun after an outage pays only the calls that
never finished. GraphRAG logs and skips a failed extraction call instead of failing, so a
run in which any model call failed is recorded ``failed`` and raised, and the next open runs
the pipeline again. What indexing cost is in ``cost.json`` beside it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.audit.baselines.index_store import append_run, booked, read_cost, run_from_usage, slug
from workbench.audit.baselines.skill_indexes import (
    EMBED_DIM,
    EMBEDDER,
    ROLE,
    SkillIndexes,
)
from workbench.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.llm.protocol import ModelGateway

LIBRARY = "graphrag"
INSTALL_HINT = ("The graphrag baseline needs Microsoft GraphRAG, an optional overlay: run "
                "`make install-graphrag` (pip install --no-deps -r requirements-graphrag.txt)")
STEP = "graphrag.index"
QUERY_STEP = "graphrag.query"
COMMUNITY_LEVEL = 2  # GraphRAG's default for local search
DONE = "processed"


class GraphragUnavailable(WorkbenchError, RuntimeError):
    """The GraphRAG library is not installed; the message names the fix."""

    fatal = True


class GraphragIndexError(WorkbenchError, RuntimeError):
    """GraphRAG could not index a SKILL (a model call failed, or a workflow did)."""


def offline_environment() -> None:
    """GraphRAG's tokenizer (o200k) and litellm's cost map would be downloaded; both ship
    inside litellm's wheel, so point the libraries at those copies before importing them."""
    from workbench.llm.tokens import _bundled_cache_dir

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_bundled_cache_dir()))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@functools.cache
def _graphrag() -> dict[str, Any]:
    """The library's entry points, imported on first use (tens of seconds to import)."""
    offline_environment()
    try:
        from importlib.metadata import version

        import graphrag.api as api
        from graphrag.config.embeddings import entity_description_embedding
        from graphrag.config.load_config import load_config
        from graphrag.query import indexer_adapters
        from graphrag.query.factory import get_local_search_engine
        from graphrag.utils.api import get_embedding_store
        from graphrag_llm.completion.completion import LLMCompletion
        from graphrag_llm.completion.completion_factory import register_completion
        from graphrag_llm.embedding.embedding import LLMEmbedding
        from graphrag_llm.embedding.embedding_factory import register_embedding
        from graphrag_llm.middleware.with_middleware_pipeline import with_middleware_pipeline
        from graphrag_llm.types import LLMEmbeddingResponse
        from graphrag_llm.utils import create_completion_response, structure_completion_response
    except ImportError as exc:
        raise GraphragUnavailable(f"{INSTALL_HINT} ({exc})") from exc
    return dict(
        version=version("graphrag"), api=api, load_config=load_config,
        entity_description_embedding=entity_description_embedding,
        get_local_search_engine=get_local_search_engine, indexer_adapters=indexer_adapters,
        get_embedding_store=get_embedding_store, LLMCompletion=LLMCompletion,
        register_completion=register_completion, LLMEmbedding=LLMEmbedding,
        register_embedding=register_embedding, with_middleware_pipeline=with_middleware_pipeline,
        LLMEmbeddingResponse=LLMEmbeddingResponse,
        create_completion_response=create_completion_response,
        structure_completion_response=structure_completion_response,
    )


def as_messages(messages: Any) -> list[dict[str, str]]:
    """GraphRAG's messages (a string, dicts or openai message objects) as gateway messages."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for m in messages or []:
        role = m.get("role") if isinstance(m, dict) else getattr(m, "role", "user")
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", "")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        out.append({"role": str(role or "user"), "content": str(content or "")})
    return out


class GatewayCall:
    """One model call of GraphRAG's, made through the gateway; its usage is appended to
    ``usage`` and a failure to ``failures`` (GraphRAG itself may swallow the error)."""

    def __init__(self, gateway: ModelGateway, skill: str, usage: list[Any], failures: list[str],
                 step: str = STEP) -> None:
        self.gateway, self.skill, self.usage, self.failures = gateway, skill, usage, failures
        self.step = step

    def __call__(self, messages: Any, response_format: Any = None) -> str:
        msgs = as_messages(messages)
        step = f"{self.step}:{self.skill}"

        def call() -> Any:
            if response_format is None:
                return self.gateway.complete_text(role=ROLE, messages=msgs, step=step)
            return self.gateway.complete_json(role=ROLE, messages=msgs, step=step,
                                              schema=response_format.model_json_schema(),
                                              schema_name=response_format.__name__)

        try:
            res = booked(self.usage, call)
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            raise
        return res.text if response_format is None else json.dumps(res.data)


def _model_classes(lib: dict[str, Any]) -> tuple[type, type]:
    """GraphRAG completion and embedding classes over a :class:`GatewayCall` and an encoder.
    Built on first use: their bases come from the optional library."""

    class Piped:
        """What both classes share: GraphRAG's own middleware (its JSON cache is what makes
        indexing resumable) around a plain function; no retries or rate limits here, the
        gateway has its own."""

        def _pipe(self, base, request_type: str, *, model_config, tokenizer, metrics_store,
                  metrics_processor=None, cache=None, cache_key_creator=None, **_: Any) -> None:
            self._tokenizer, self._metrics_store = tokenizer, metrics_store

            async def abase(**kw: Any):
                return await asyncio.to_thread(base, **kw)

            self._sync, self._async = lib["with_middleware_pipeline"](
                model_config=model_config, model_fn=base, async_model_fn=abase,
                metrics_processor=metrics_processor, cache=cache,
                cache_key_creator=cache_key_creator, request_type=request_type,
                tokenizer=tokenizer, rate_limiter=None, retrier=None)

        @property
        def metrics_store(self):
            return self._metrics_store

        @property
        def tokenizer(self):
            return self._tokenizer

    class GatewayCompletion(Piped, lib["LLMCompletion"]):
        def __init__(self, *, call: GatewayCall, **config: Any):
            def base(**kw: Any):
                return lib["create_completion_response"](call(kw.get("messages"),
                                                              kw.get("response_format")))

            self._pipe(base, "chat", **config)

        def _finish(self, response, response_format):
            if response_format is not None:
                response.formatted_response = lib["structure_completion_response"](
                    response.content, response_format)
            return response

        def completion(self, /, **kwargs: Any):
            fmt = kwargs.get("response_format")
            kwargs.pop("metrics", None)
            return self._finish(self._sync(**kwargs), fmt)

        async def completion_async(self, /, **kwargs: Any):
            fmt = kwargs.get("response_format")
            kwargs.pop("metrics", None)
            return self._finish(await self._async(**kwargs), fmt)

    class EncoderEmbedding(Piped, lib["LLMEmbedding"]):
        def __init__(self, *, encoder: Any, name: str, **config: Any):
            def base(**kw: Any):
                texts = kw.get("input")
                texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
                vectors = encoder.encode(texts) if texts else []
                return lib["LLMEmbeddingResponse"](
                    object="list", model=name,
                    data=[{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                          for i, v in enumerate(vectors)],
                    usage={"prompt_tokens": 0, "total_tokens": 0})

            self._pipe(base, "embedding", **config)

        def embedding(self, /, **kwargs: Any):
            kwargs.pop("metrics", None)
            return self._sync(**kwargs)

        async def embedding_async(self, /, **kwargs: Any):
            kwargs.pop("metrics", None)
            return await self._async(**kwargs)

    return GatewayCompletion, EncoderEmbedding


# GraphRAG's defaults for how long (in tokens, its config says; "words", its prompts say) a
# community report and a merged entity description may be.
REPORT_LENGTH, DESCRIPTION_LENGTH = 2000, 500


def settings(folder: Path, completion_type: str, embedding_type: str, model: str,
             embedder: str, concurrency: int, max_answer_tokens: int) -> dict[str, Any]:
    """A GraphRAG project's settings: the library's defaults except where our models, our
    folder and offline storage must be named, and report and description lengths, which never
    ask for more than the extractor role may answer (``max_answer_tokens``).
    Asked for 2,000 words with room for 1,024 tokens, a report is cut off every time."""
    return {
        "community_reports": {"max_length": min(REPORT_LENGTH, max_answer_tokens)},
        "summarize_descriptions": {"max_length": min(DESCRIPTION_LENGTH, max_answer_tokens)},
        "completion_models": {"default_completion_model": {
            "type": completion_type, "model_provider": "workbench", "model": model}},
        "embedding_models": {"default_embedding_model": {
            "type": embedding_type, "model_provider": "workbench", "model": embedder}},
        "concurrent_requests": max(1, concurrency),
        "input": {"type": "text"},
        "input_storage": {"type": "file", "base_dir": str(folder / "input")},
        "output_storage": {"type": "file", "base_dir": str(folder / "output")},
        "reporting": {"type": "file", "base_dir": str(folder / "logs")},
        "cache": {"type": "json", "storage": {"type": "file", "base_dir": str(folder / "cache")}},
        "vector_store": {"type": "lancedb", "db_uri": str(folder / "output" / "lancedb"),
                         "vector_size": EMBED_DIM},
    }


class GraphragIndexes(SkillIndexes):
    """Opens (building or resuming when needed) one GraphRAG index per SKILL; the arguments
    are :class:`~workbench.audit.baselines.skill_indexes.SkillIndexes`'.

    ``failures``: every failed model call or workflow of this object's indexing runs.
    """

    library = LIBRARY

    def __init__(self, gateway: ModelGateway | None = None, encoder: Any = None,
                 root: str | os.PathLike[str] | None = None, embedder_name: str = EMBEDDER) -> None:
        super().__init__(gateway, encoder, root, embedder_name)
        self.failures: list[str] = []

    def load_library(self) -> dict[str, Any]:
        return _graphrag()

    def _config(self, skill: str, folder: Path, usage: list[Any], failures: list[str],
                step: str) -> Any:
        """Register this index's model classes under fresh names and load its settings.
        The names are not in GraphRAG's cache keys (only the request is), so a later
        process's cache lookups still hit."""
        completion_cls, embedding_cls = _model_classes(self.lib)
        tag = uuid.uuid4().hex[:12]
        ctype, etype = f"workbench-chat-{tag}", f"workbench-embed-{tag}"
        call = GatewayCall(self.gateway, skill, usage, failures, step)
        self.lib["register_completion"](ctype, functools.partial(completion_cls, call=call))
        self.lib["register_embedding"](etype, functools.partial(
            embedding_cls, encoder=self.encoder, name=self.embedder_name))
        role = self.gateway.config.role(ROLE)
        conf = settings(folder, ctype, etype, self.model, self.embedder_name, role.concurrency,
                        role.max_tokens)
        # JSON is YAML: GraphRAG reads settings.yaml from the project folder.
        (folder / "settings.yaml").write_text(json.dumps(conf, indent=1), encoding="utf-8")
        return self.lib["load_config"](folder)

    def _open_index(self, skill: str, source: str, folder: Path, variant: Any = None) -> Any:
        """The SKILL's local-search context builder, indexed (built or resumed when needed).

        Raises GraphragIndexError when a model call or a workflow failed (the index stays
        resumable: run again once the model is reachable).
        """
        (folder / "input").mkdir(parents=True, exist_ok=True)
        doc = folder / "input" / f"{slug(skill)}.txt"
        if not doc.is_file() or doc.read_text(encoding="utf-8") != source:
            doc.write_text(source, encoding="utf-8")
        cost = read_cost(folder)
        built = (cost is not None and cost.runs and cost.runs[-1].status == DONE
                 and (folder / "output" / "entities.parquet").is_file())
        if not built:
            self._index(skill, source, folder)
        return self._search_context(skill, folder)

    def _index(self, skill: str, source: str, folder: Path) -> None:
        usage: list[Any] = []
        failures: list[str] = []
        config = self._config(skill, folder, usage, failures, STEP)
        started, t0 = time.time(), time.perf_counter()
        try:
            results = self.run(self.lib["api"].build_index(config=config))
            errors = [f"{r.workflow}: {r.error!r}" for r in results or [] if r.error]
        except Exception as exc:  # a workflow that raised instead of reporting
            errors = [f"{type(exc).__name__}: {exc}"]
        bad = failures + errors
        run = run_from_usage(usage, started, time.perf_counter() - t0,
                             "failed" if bad else DONE)
        append_run(folder, run, skill=skill, source=source, library_version=self.lib["version"],
                   model=self.model, embedder=self.embedder_name)
        if bad:
            self.failures.extend(bad)
            raise GraphragIndexError(
                f"GraphRAG could not index SKILL {skill!r}: {bad[0]}"
                + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""),
                "check the extractor model (`workbench model check --role extractor`) and run "
                "again: the index resumes, finished model calls are not paid twice")

    def _search_context(self, skill: str, folder: Path) -> Any:
        """GraphRAG's local-search context builder over the stored tables. Its chat model is
        never called (context only); its embedder embeds the query."""
        import pandas as pd

        lib = self.lib
        config = self._config(skill, folder, [], [], QUERY_STEP)
        out = folder / "output"

        def table(name: str):
            return pd.read_parquet(out / f"{name}.parquet")

        communities = table("communities")
        store = lib["get_embedding_store"](config=config.vector_store,
                                           embedding_name=lib["entity_description_embedding"])
        adapters = lib["indexer_adapters"]  # GraphRAG's parquet tables -> its query types
        return lib["get_local_search_engine"](
            config=config,
            reports=adapters.read_indexer_reports(table("community_reports"), communities,
                                                  COMMUNITY_LEVEL),
            text_units=adapters.read_indexer_text_units(table("text_units")),
            entities=adapters.read_indexer_entities(table("entities"), communities, COMMUNITY_LEVEL),
            relationships=adapters.read_indexer_relationships(table("relationships")),
            covariates={"claims": []},
            description_embedding_store=store,
            response_type="multiple paragraphs",
        )

    def close(self) -> None:
        with self._lock:
            self._open = {}
        self.stop_loop()  # still usable after close (a later open starts afresh)


def context_params(engine: Any, max_tokens: int) -> dict[str, Any]:
    """The engine's own local-search parameters with our token limit."""
    params = dict(engine.context_builder_params)
    params["max_context_tokens"] = max(1, int(max_tokens))
    return params


def text_tables(records: Any) -> dict[str, Sequence[dict[str, Any]]]:
    """GraphRAG's ``context_records`` (name -> DataFrame) as lists of row dicts."""
    out: dict[str, Sequence[dict[str, Any]]] = {}
    for name, frame in (records or {}).items():
        try:
            out[str(name).lower()] = frame.to_dict("records")
        except AttributeError:
            out[str(name).lower()] = list(frame or [])
    return out
