"""The one door to models: structured output, retries, one repair, caching, accounting.

Every model call of the product goes through :class:`Gateway`. A call names a *role*
(extractor, fuser, keyworder, judge, matcher, ...) whose model, endpoint and limits come
from configuration, never from code. What comes back is untrusted: it is parsed, checked
against the JSON schema and the caller's ``validate``; one repair attempt tells the model
what was wrong; after that the call fails with a :class:`ModelCallError` naming the
endpoint and what to check.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from workbench.llm.cache import CachedResponse, ResponseCache, request_key
from workbench.llm.config import LlmConfig, RoleConfig, attached_url_of, load_config
from workbench.llm.errors import ModelCallError
from workbench.llm.recording import Recorder, transport_from_env
from workbench.llm.structured import (
    OutputProblem,
    Validator,
    check,
    checked,
    repair_messages,
    response_format,
)
from workbench.llm.transport import AttemptError, LiteLLMTransport, RawResponse, key_model
from workbench.llm.usage import Usage

log = logging.getLogger("workbench.llm")

MAX_BACKOFF_S = 30.0
_MESSAGE_ROLES = {"system", "user", "assistant"}


@dataclass(frozen=True)
class CallResult:
    """A finished call: ``data`` (the checked JSON object; None for free text), the raw
    ``text``, its ``usage``, the request ``key`` (for caches, recordings and traces), and
    ``checked``: what the caller's ``validate`` returned (None without one), so a validator
    that builds the typed answer is not run twice."""

    data: dict[str, Any] | None
    text: str
    usage: Usage
    key: str
    checked: Any = None
    # Token log-probabilities of the accepted answer when the call asked for them and the
    # server gave them (``workbench.llm.logprobs`` form), else None.
    logprobs: list[Any] | None = None


class _Spend:
    """What one logical call consumed across its HTTP attempts."""

    def __init__(self) -> None:
        self.prompt = self.completion = self.attempts = 0
        self.cost: float | None = None

    def add(self, raw: RawResponse) -> None:
        self.prompt += raw.prompt_tokens
        self.completion += raw.completion_tokens
        if raw.cost_usd is not None:
            self.cost = (self.cost or 0.0) + raw.cost_usd


def _hint(kind: str, role: RoleConfig, endpoint: str, step: str, attached: bool = False) -> str:
    r = role.name
    hints = {
        "timeout": f"that the server at {endpoint} is up and not overloaded; or raise "
        f"[roles.{r}].timeout (now {role.timeout:g}s) or lower max_tokens ({role.max_tokens})",
        "rate_limited": f"the provider's rate limits; lower [roles.{r}].concurrency "
        f"(now {role.concurrency}) or raise retries (now {role.retries})",
        "server_error": f"the server's own log at {endpoint}",
        "connection": f"that a server listens at {endpoint} (try `workbench model check --role "
        f"{r}`), or fix [roles.{r}].api_base / WORKBENCH_{r.upper()}_API_BASE",
        "bad_request": f"that '{role.model}' is a model this endpoint serves (litellm strings "
        "look like openai/<name>) and that the prompt fits its context",
        "auth": f"the API key: set api_key_env in [roles.{r}] and put that variable in the "
        "environment or .streamlit/secrets.toml",
        "context_overflow": "that the prompt fits the model's context; for the embedded model "
        "raise [embedded].ctx_size (each of the parallel slots gets ctx_size / parallel)",
        "malformed_response": f"that {endpoint} is an OpenAI-compatible /v1/chat/completions server",
        "invalid_output": f"the prompt and schema of step '{step or '?'}'; a stronger model "
        f"([roles.{r}].model) or a higher max_tokens (now {role.max_tokens}) may help",
    }
    if kind == "connection" and role.is_embedded and attached:
        return (f"that `workbench model serve` still runs at {endpoint} (start it again), or unset "
                "[embedded].url / WORKBENCH_EMBEDDED_URL to run the model in this process")
    return hints.get(kind, "")


class Gateway:
    """Calls models for roles. Thread-safe; async methods run calls on a bounded pool.

    ``cache``: a ResponseCache (e.g. ``store.llm_cache.SqlResponseCache``) or None.
    ``recorder``: a :class:`Recorder` (live calls, appended to a fixture file) or a
    :class:`Replayer` (answers only from recordings), or None for plain live calls.
    ``usage_sink``: called with every :class:`Usage` (e.g. to persist it); failures of the
    sink are logged, never raised. ``endpoint_sink``: called with every HTTP attempt of a
    fleet role (an ``llm.fleet.EndpointAttempt``: which endpoint, ok or not).
    ``transport`` replaces the live litellm transport (tests).
    """

    def __init__(
        self,
        config: LlmConfig | None = None,
        cache: ResponseCache | None = None,
        recorder: Any = None,
        *,
        usage_sink: Callable[[Usage], None] | None = None,
        transport: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        endpoint_sink: Callable[[Any], None] | None = None,
    ) -> None:
        self.config = config or load_config()
        self.cache = cache
        live = transport or LiteLLMTransport(self.config, on_attempt=endpoint_sink)
        self._live = live
        if isinstance(recorder, Recorder):
            recorder.bind(live)
        self._transport = recorder if recorder is not None else live
        self.mode = {"Recorder": "record", "Replayer": "replay"}.get(type(recorder).__name__, "live")
        self.usage_log: list[Usage] = []
        self._usage_sink = usage_sink
        self._sleep = sleep
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._async_slots: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Semaphore]] = (
            weakref.WeakKeyDictionary()
        )
        self._executor: ThreadPoolExecutor | None = None
        # A workbench.llm.onepass.OnePass: the judge's prompts are read in this process on the
        # way to the server (their hidden states kept), so activations cost no second pass.
        self.onepass: Any = None

    @classmethod
    def from_env(
        cls,
        config: LlmConfig | None = None,
        cache: ResponseCache | None = None,
        *,
        usage_sink: Callable[[Usage], None] | None = None,
        endpoint_sink: Callable[[Any], None] | None = None,
    ) -> Gateway:
        """A gateway in the mode ``WORKBENCH_LLM_MODE`` selects (live, record or replay)."""
        return cls(
            config or load_config(),
            cache,
            transport_from_env(),
            usage_sink=usage_sink,
            endpoint_sink=endpoint_sink,
        )

    # -- public calls ---------------------------------------------------------------------

    def complete_json(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        schema: Mapping[str, Any],
        schema_name: str = "answer",
        step: str = "",
        validate: Validator | None = None,
        use_cache: bool = True,
        *,
        logprobs: int | None = None,
        sample: tuple[float, int] | None = None,
        max_tokens: int | None = None,
    ) -> CallResult:
        """A JSON object matching ``schema``. ``validate(data)`` may raise ValueError to
        reject it (the message goes into the one repair attempt). Raises ModelCallError.

        ``logprobs=N`` asks the server for token log-probabilities with the N most likely
        alternatives (part of the request, so of its key); ``result.logprobs`` is None when
        the server gave none. ``sample=(temperature, seed)`` overrides the role's temperature
        and seed: one of k sampled answers, each its own cached request. ``max_tokens``
        overrides the role's answer room (an answer whose length grows with its input)."""
        extra: dict[str, Any] = {}
        if max_tokens is not None:
            extra["max_tokens"] = int(max_tokens)
        if logprobs:
            extra.update(logprobs=True, top_logprobs=int(logprobs))
        if sample is not None:
            extra.update(temperature=float(sample[0]), seed=int(sample[1]))
        return self._call(role, messages, dict(schema), schema_name, step, validate, use_cache,
                          extra)

    def complete_text(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        step: str = "",
        validate: Callable[[str], Any] | None = None,
        use_cache: bool = True,
    ) -> CallResult:
        """Free text (``data`` is None). An empty reply counts as unusable."""
        return self._call(role, messages, None, "", step, validate, use_cache)

    async def acomplete_json(self, role: str, *args: Any, **kwargs: Any) -> CallResult:
        """As :meth:`complete_json`, with the same arguments (passed on as given, so the two
        cannot drift apart); at most the role's ``concurrency`` calls run at once."""
        call = functools.partial(self.complete_json, role, *args, **kwargs)
        return await self._run_async(role, call)

    def build_request(
        self,
        role: RoleConfig,
        messages: Sequence[Mapping[str, Any]],
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The request as keyed, cached and recorded: no address, key or timeout in it.
        ``extra``: request fields a call adds or overrides (log-probabilities, sampling)."""
        request: dict[str, Any] = {
            "model": key_model(role),
            "messages": [dict(m) for m in messages],
            "temperature": role.temperature,
            "max_tokens": role.max_tokens,
        }
        if schema is not None:
            request["response_format"] = response_format(schema, schema_name)
        if role.seed is not None:
            request["seed"] = role.seed
        request.update(extra or {})
        return request

    def with_config(self, config: LlmConfig) -> Gateway:
        """A gateway with other settings but the same transport, mode and usage sink, and no
        cache (e.g. a connection check with retries off)."""
        clone = Gateway(
            config, None, transport=self._transport, usage_sink=self._usage_sink, sleep=self._sleep
        )
        clone.mode = self.mode
        return clone

    def endpoint(self, role: str) -> str:
        return self._transport.endpoint(self.config.role(role))

    def endpoint_stats(self, role: str) -> dict[str, Any]:
        """Per-endpoint ``EndpointStats`` of a fleet role in this process ({} otherwise)."""
        fleet = getattr(self._live, "fleet", None)
        return fleet.stats(role) if fleet is not None else {}

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # -- the call -------------------------------------------------------------------------

    def _call(
        self,
        role_name: str,
        messages: Sequence[Mapping[str, Any]],
        schema: dict[str, Any] | None,
        schema_name: str,
        step: str,
        validate: Callable[[Any], Any] | None,
        use_cache: bool,
        extra: Mapping[str, Any] | None = None,
    ) -> CallResult:
        role = self.config.role(role_name)
        _check_messages(messages)
        request = self.build_request(role, messages, schema, schema_name, extra)
        key = request_key(request)
        started = time.perf_counter()

        if use_cache and self.cache is not None:
            hit = self._from_cache(key, schema, validate, role, step, started)
            if hit is not None:
                return hit

        spend = _Spend()
        error = ""
        failed: BaseException | None = None
        try:
            raw = self._send(role, request, key, spend, step, onepass=self._onepass_for(step))
            try:
                data, valid = self._accept(raw, schema, validate)
            except OutputProblem as problem:
                fixed = dict(request)
                if problem.truncated and request.get("max_tokens"):
                    # Cut off at the limit: at low temperature the same prompt gives the same
                    # prefix, so twice the room finishes it; echoing the cut-off text back
                    # would only spend prompt tokens on it.
                    fixed["max_tokens"] = 2 * int(request["max_tokens"])
                else:
                    fixed["messages"] = repair_messages(
                        request["messages"], raw.text, str(problem), structured=schema is not None
                    )
                raw = self._send(role, fixed, request_key(fixed), spend, step)
                try:
                    data, valid = self._accept(raw, schema, validate)
                except OutputProblem as again:
                    raise ModelCallError(
                        f"the answer was unusable ({problem}), and again after one repair attempt ({again})",
                        role=role.name,
                        model=role.model,
                        endpoint=self._transport.endpoint(role),
                        kind="invalid_output",
                        attempts=spend.attempts,
                        hint=_hint("invalid_output", role, "", step),
                    ) from None
        except BaseException as exc:
            error = getattr(exc, "kind", "") or type(exc).__name__
            failed = exc
            raise
        finally:
            usage = _usage(role, step, started, prompt_tokens=spend.prompt,
                           completion_tokens=spend.completion, cost_usd=spend.cost, cached=False,
                           attempts=spend.attempts, error=error)
            if spend.attempts:
                self._account(usage)
            if isinstance(failed, ModelCallError) and failed.usage is None:
                failed.usage = usage  # a caller keeping its own books counts what failed too

        if use_cache and self.cache is not None:
            self._store(CachedResponse.answered(key, request, raw.text, usage, raw.logprobs))
        return CallResult(data=data, text=raw.text, usage=usage, key=key, checked=valid,
                          logprobs=raw.logprobs)

    def _from_cache(
        self,
        key: str,
        schema: dict[str, Any] | None,
        validate: Callable[[Any], Any] | None,
        role: RoleConfig,
        step: str,
        started: float,
    ) -> CallResult | None:
        assert self.cache is not None
        try:
            entry = self.cache.get(key)
        except Exception:  # a broken cache costs a model call, never the answer
            log.exception("response cache lookup failed; asking the model")
            return None
        if entry is None:
            return None
        try:
            data, valid = self._accept(RawResponse(entry.text, "stop", 0, 0, None, ""), schema,
                                       validate)
        except OutputProblem:
            # Stored under rules that have since changed: ask the model again.
            return None
        usage = _usage(role, step, started, prompt_tokens=entry.prompt_tokens,
                       completion_tokens=entry.completion_tokens, cost_usd=0.0, cached=True,
                       attempts=0)
        self._account(usage)
        return CallResult(data=data, text=entry.text, usage=usage, key=key, checked=valid,
                          logprobs=entry.logprobs)

    def _store(self, entry: CachedResponse) -> None:
        assert self.cache is not None
        try:
            self.cache.put(entry)
        except Exception:  # the answer is good; failing to keep it must not lose it
            log.exception("could not store a response in the cache (key %s)", entry.key)

    @staticmethod
    def _accept(
        raw: RawResponse, schema: dict[str, Any] | None, validate: Callable[[Any], Any] | None
    ) -> tuple[dict[str, Any] | None, Any]:
        if schema is not None:
            return check(raw.text, raw.finish_reason, schema, validate)
        if not raw.text.strip():
            raise OutputProblem("the reply was empty")
        return None, checked(validate, raw.text)

    def _onepass_for(self, step: str) -> Any:
        """The OnePass to read this call's prompt with (``onepass`` set and its step), if the
        transport can take one."""
        tap = self.onepass
        if tap is None or not tap.wants(step):
            return None
        return tap if getattr(self._transport, "supports_onepass", False) else None

    def _send(
        self, role: RoleConfig, request: dict[str, Any], key: str, spend: _Spend, step: str,
        onepass: Any = None,
    ) -> RawResponse:
        """One exchange with retries and exponential backoff on transient failures.
        ``onepass``: given to the first attempt only (a retry lets the server read again)."""
        last: AttemptError | None = None
        with self._slot(role):
            for attempt in range(role.retries + 1):
                spend.attempts += 1
                try:
                    if onepass is not None and attempt == 0:
                        raw = self._transport.send(request, role, key=key, onepass=onepass)
                    else:
                        raw = self._transport.send(request, role, key=key)
                except AttemptError as err:
                    last = err
                    if not err.retryable or attempt == role.retries:
                        break
                    self._sleep(self._backoff(role, attempt, err))
                    continue
                spend.add(raw)
                return raw
        assert last is not None
        endpoint = self._transport.endpoint(role)
        raise ModelCallError(
            str(last),
            role=role.name,
            model=role.model,
            endpoint=endpoint,
            kind=last.kind,
            attempts=spend.attempts,
            hint=_hint(last.kind, role, endpoint, step, bool(attached_url_of(self.config, role))),
        ) from last

    @staticmethod
    def _backoff(role: RoleConfig, attempt: int, err: AttemptError) -> float:
        if err.retry_after is not None:
            return min(err.retry_after, MAX_BACKOFF_S)
        # Jitter spreads retries of concurrent calls so they do not hit the server together.
        return min(role.retry_backoff * (2**attempt), MAX_BACKOFF_S) * random.uniform(0.8, 1.2)

    def _account(self, usage: Usage) -> None:
        with self._lock:
            self.usage_log.append(usage)
        if self._usage_sink is not None:
            try:
                self._usage_sink(usage)
            except Exception:  # accounting must never break a call
                log.exception("could not record model usage for step %r", usage.step)

    # -- concurrency ----------------------------------------------------------------------

    @contextmanager
    def _slot(self, role: RoleConfig):
        with self._lock:
            sem = self._slots.setdefault(role.name, threading.BoundedSemaphore(role.concurrency))
        with sem:
            yield

    async def _run_async(self, role_name: str, call: Callable[[], CallResult]) -> CallResult:
        role = self.config.role(role_name)
        loop = asyncio.get_running_loop()
        with self._lock:
            per_loop = self._async_slots.setdefault(loop, {})
            sem = per_loop.setdefault(role.name, asyncio.Semaphore(role.concurrency))
            if self._executor is None:
                workers = min(64, sum(r.concurrency for r in self.config.roles.values()) + 1)
                self._executor = ThreadPoolExecutor(workers, thread_name_prefix="llm")
            executor = self._executor
        async with sem:
            return await loop.run_in_executor(executor, call)


def _usage(role: RoleConfig, step: str, started: float, **spent: Any) -> Usage:
    """The Usage of a call of ``role`` for ``step`` that began at ``started`` (perf_counter);
    ``spent``: its tokens, cost, attempts, cache hit and error."""
    return Usage(latency_ms=(time.perf_counter() - started) * 1000.0, model=key_model(role),
                 role=role.name, step=step, **spent)


def _check_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    if not messages:
        raise ValueError("messages must not be empty")
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or m.get("role") not in _MESSAGE_ROLES:
            raise ValueError(f"message {i} needs a role in {sorted(_MESSAGE_ROLES)}")
        if not isinstance(m.get("content"), str):
            raise ValueError(f"message {i} needs text content")
