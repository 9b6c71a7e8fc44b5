"""The Ray Data batch engine: the same per-case pipeline, spread over Ray workers.

``run_audit(..., engine=RayEngine(...))`` plans the run exactly as the local engine does
(cases already in ``--out`` are skipped, failed ones retried) and writes every trace through
the same writer in the driver; only the auditing of cases moves to Ray. Cases flow as Ray
Data batches through a pool of ``workers`` actors; each actor builds the policy index and
its model gateway once, in its constructor, and reuses them for every case it gets.

Ray is optional: imported only here, and a missing Ray fails with the command to install it.
``address`` is a running cluster (``ray://HOST:10001`` or ``auto``); None starts Ray locally.
What the engine starts it shuts down when its iterator ends (finished, failed or closed
early): ``ray.shutdown(wait_for_processes=True)``. Left to the interpreter's exit hook, which
does not wait, Ray's DashboardAgent and RuntimeEnvAgent stayed running after the command,
ignoring SIGTERM (issue 32). A Ray that was already running (a test's, a caller's) is left as
it is; a cluster given by ``address`` is only disconnected from.

Activations (``activations``, a picklable factory of a ``workbench.llm.onepass.OnePass``):
each worker reads its judge's prompts in its own pass, as a local audit does, and sends each
case's reading back with its trace; the driver keeps them beside the run through the same
``FeatureWriter`` (:attr:`RayEngine.readings` stands in for the OnePass there).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from workbench.audit.cases import AuditCase, case_from_dict
from workbench.audit.pipeline import AuditOptions
from workbench.audit.trace import AuditTrace


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "--engine ray needs Ray Data: pip install 'ray[data]' (the dev extra pins it), "
            "or use the default local engine"
        ) from None
    return ray


class _AuditActor:
    """One Ray worker: the index and the gateway are made once, then serve every batch."""

    def __init__(self, index_data: dict, gateway_factory: Callable[[], Any] | None,
                 env: dict[str, str], strategy: str, options: AuditOptions,
                 activations: Callable[[], Any] | None = None) -> None:
        import os

        os.environ.update(env)  # e.g. WORKBENCH_LLM_MODE, WORKBENCH_DB: the driver's settings
        from workbench.audit.policy import AuditIndex
        from workbench.audit.strategies import get_strategy
        from workbench.graph import PolicyIndex

        self.index = AuditIndex(PolicyIndex.from_dict(index_data))
        self.gateway = gateway_factory() if gateway_factory is not None else None

        # one instance per worker (a dense encoder loads once), on the worker's gateway
        self.strategy = get_strategy(strategy, self.gateway)
        self.options = options
        self.onepass = activations() if activations is not None else None
        if self.onepass is not None and self.gateway is not None:
            self.gateway.onepass = self.onepass

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[str]]:
        from workbench.audit.runner import audit_one

        out, readings = [], []
        for case_json in batch["case"]:
            case = case_from_dict(json.loads(str(case_json)), "case")
            trace = audit_one(case, self.index, self.strategy, self.gateway, self.options)
            out.append(json.dumps(trace.to_dict(), ensure_ascii=False))
            readings.append(self._reading(case, trace))
        return {"trace": out, "reading": readings}

    def _reading(self, case: AuditCase, trace: AuditTrace) -> str:
        """The case's reading as JSON (array as float16 bytes in base64), "" without one."""
        if self.onepass is None or not trace.context:
            return ""
        from workbench.audit.judge import judge_messages

        messages = judge_messages(case, trace.context)
        try:
            reading = self.onepass.take(messages) or self.onepass.reader().read(messages)
        except Exception:  # activations are an extra: the driver reads the case itself
            return ""
        return encode_reading(messages, reading)


def encode_reading(messages: Any, reading: Any) -> str:
    """A worker's reading of ``messages`` as one JSON line (see :class:`Readings`)."""
    import base64

    import numpy as np

    from workbench.decision.features import prompt_sha

    blob = np.asarray(reading.array, dtype=np.float16)
    return json.dumps({"sha": prompt_sha(messages), "features": list(reading.features),
                       "shape": list(blob.shape), "array": base64.b64encode(blob.tobytes()).decode(),
                       "prompt_tokens": reading.prompt_tokens,
                       "reply_tokens": reading.reply_tokens, "seconds": reading.seconds})


class Readings:
    """The workers' readings, in the driver: what a ``FeatureWriter`` takes from a OnePass
    (:meth:`take`), with ``reader`` for a case whose worker sent none."""

    def __init__(self, source: str, reader: Callable[[], Any]) -> None:
        self.source = source
        self._reader = reader
        self._by_sha: dict[str, Any] = {}

    def add(self, line: str) -> None:
        if not line:
            return
        import base64

        import numpy as np

        from workbench.llm.onepass import Reading

        d = json.loads(line)
        array = np.frombuffer(base64.b64decode(d["array"]), dtype=np.float16).reshape(d["shape"])
        self._by_sha[d["sha"]] = Reading(array.astype(np.float32), tuple(d["features"]),
                                         int(d["prompt_tokens"]), int(d["reply_tokens"]),
                                         float(d["seconds"]))

    def take(self, messages: Any) -> Any:
        from workbench.decision.features import prompt_sha

        return self._by_sha.pop(prompt_sha(messages), None)

    def reader(self) -> Any:
        return self._reader()


class RayEngine:
    """Audits cases on Ray. ``gateway_factory`` (picklable, called once in each worker) makes
    the worker's model gateway; None: no model calls (e.g. --no-judge, lexical keywords).
    ``env``: variables set in each worker before anything is built."""

    def __init__(
        self,
        index_data: dict,
        gateway_factory: Callable[[], Any] | None = None,
        *,
        workers: int = 2,
        address: str | None = None,
        batch_size: int = 1,
        env: dict[str, str] | None = None,
        activations: Callable[[], Any] | None = None,
        readings: Readings | None = None,
    ) -> None:
        """``activations``: a picklable factory of each worker's OnePass (see the module
        doc); the readings it sends back go to ``readings``."""
        if workers < 1 or batch_size < 1:
            raise ValueError("workers and batch_size must be at least 1")
        self.index_data = index_data
        self.gateway_factory = gateway_factory
        self.workers = workers
        self.address = address
        self.batch_size = batch_size
        self.env = dict(env or {})
        self.activations = activations
        self.readings = readings

    def audit(
        self, cases: Iterable[AuditCase], strategy: str, options: AuditOptions
    ) -> Iterator[AuditTrace]:
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        try:
            yield from self._audit(ray, cases, strategy, options)
        finally:
            if started:
                ray.shutdown(wait_for_processes=True)

    def _audit(self, ray, cases, strategy, options) -> Iterator[AuditTrace]:
        items = [{"case": json.dumps(c.to_dict(), ensure_ascii=False)} for c in cases]
        if not items:
            return
        import ray.data

        ds = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * self.workers))
        traces = ds.map_batches(
            _AuditActor,
            fn_constructor_args=(self.index_data, self.gateway_factory, self.env, strategy, options,
                                 self.activations),
            batch_size=self.batch_size,
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=0,  # the work waits on model servers; do not let CPU slots cap the pool
            batch_format="default",
        )
        for row in traces.iter_rows():
            if self.readings is not None:
                self.readings.add(row.get("reading") or "")
            yield AuditTrace.from_dict(json.loads(row["trace"]))
