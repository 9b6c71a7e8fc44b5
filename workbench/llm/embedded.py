"""The embedded model server: llama.cpp's OpenAI-compatible HTTP server, in this process.

``xllamacpp.Server`` loads the GGUF and serves ``/v1/chat/completions`` on 127.0.0.1 from
native threads. One server per embedded model and process (``default``, the 1.5B, and
``small``, the 0.5B; see ``workbench.llm.weights``): each starts on first use by a role whose
model is ``embedded`` / ``embedded:small`` (or by ``workbench model serve --model``), is
checked on ``/health``, and stops at interpreter exit. Two servers in one process were
measured to work (each its own port, model and threads). JSON-schema ``response_format``
is enforced by the server's grammar sampler; GBNF grammars can be passed as
``extra_body={"grammar": ...}``.

Sizing on a small CPU machine: threads = all cores, waiting passively (see ``start``) so a
busy machine does not collapse throughput; the context (``ctx_size``, 32768 by
default) is split evenly over ``parallel`` slots (2 by default, so 16384 tokens per request,
prompt plus answer); ``workbench.llm.config`` refuses settings that leave a slot too small.
The audit sizes judge prompts to the slot (``workbench.audit.window``).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.llm.config import EmbeddedConfig
from workbench.llm.errors import EmbeddedModelUnavailable
from workbench.llm.weights import DEFAULT_MODEL, assembled_path, cache_dir, embedded_model

XLLAMACPP_HINT = (
    "Install it with `make install` (or `pip install xllamacpp==2026.10.11549`); it is the "
    "prebuilt llama.cpp server the embedded model runs on."
)


@dataclass(frozen=True)
class ServerInfo:
    url: str  # http://127.0.0.1:PORT (append /v1 for the OpenAI API)
    alias: str
    slots: int
    slot_ctx: int
    threads: int
    assemble_s: float
    startup_s: float
    model: str = DEFAULT_MODEL  # which embedded model (workbench.llm.weights)


class EmbeddedServer:
    """A started server. Use :func:`ensure_embedded_server` rather than building one."""

    def __init__(self, config: EmbeddedConfig, quiet: bool = True, adapter: Path | None = None,
                 model: str = DEFAULT_MODEL) -> None:
        self.config = config
        self.quiet = quiet
        self.adapter = adapter
        self.model = embedded_model(model)
        self._server: Any = None
        self.info: ServerInfo | None = None
        # Where llama.cpp may load a slot's KV cache from (``workbench.llm.onepass``): a
        # private folder of this server, removed when it stops.
        self.slot_dir: Path | None = None

    @property
    def url(self) -> str:
        if self.info is None:
            raise RuntimeError("embedded server is not running")
        return self.info.url

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self, progress: Callable[[str], None] | None = None) -> ServerInfo:
        # llama.cpp's CPU threads synchronise through OpenMP barriers that spin by default.
        # When other processes share the cores (the UI, tests, a second server), spinning
        # threads starve each other: on 2 busy cores we measured 0.3-0.5 generated tok/s with
        # spinning and 3.7-4.1 tok/s with passive waits. Must be set before the library loads;
        # OMP_WAIT_POLICY=ACTIVE in the environment restores spinning on a dedicated machine.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp
        except ImportError as exc:
            raise EmbeddedModelUnavailable(
                f"the embedded model server package xllamacpp is not installed ({exc}). " + XLLAMACPP_HINT
            ) from exc
        t0 = time.perf_counter()
        model_path = assembled_path(cache_dir(self.config.cache_dir or None), progress=progress,
                                    model=self.model.name)
        assemble_s = time.perf_counter() - t0

        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        alias = self.model.alias
        if self.adapter is not None:
            lora = xllamacpp.CommonAdapterLoraInfo()
            lora.path = str(self.adapter)
            lora.scale = 1.0
            params.lora_adapters = [lora]
            alias = adapter_alias(self.adapter, self.model.name)
        params.model_alias = {alias}
        params.hostnames = ["127.0.0.1"]
        params.port = self.config.port  # 0: the server picks a free port
        params.n_ctx = self.config.ctx_size
        params.n_parallel = self.config.parallel
        params.cpuparams.n_threads = self.config.n_threads
        params.cpuparams_batch.n_threads = self.config.n_threads
        params.ui = False
        params.cache_ram_mib = self.config.cache_ram
        import tempfile

        self.slot_dir = Path(tempfile.mkdtemp(prefix="workbench-slots-"))
        params.slot_save_path = f"{self.slot_dir}/"  # llama.cpp appends the file name as is
        if self.quiet:
            params.verbosity = 0  # keep llama.cpp's per-request log lines off our stderr
        if progress:
            progress(
                f"starting llama.cpp with {self.model.title} on 127.0.0.1 ({self.config.n_threads} threads, "
                f"{self.config.parallel} slots x {self.config.slot_ctx} tokens)"
            )
        t1 = time.perf_counter()
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:
            self.stop()  # removes the slot folder made above
            why = (f"with the adapter {self.adapter} ({exc}); export it again with `workbench train "
                   "export` from a run on this model" if self.adapter is not None else
                   f"({exc}); the model file is {model_path}. Delete it to have it assembled "
                   "again, and check free memory (~2 GB needed)")
            raise EmbeddedModelUnavailable(f"the embedded server did not start {why}") from exc
        url = str(server.listening_address).rstrip("/")
        self._server = server
        try:
            props = _wait_healthy(url, self.config.startup_timeout)
        except EmbeddedModelUnavailable:
            self.stop()
            raise
        slot_ctx = int((props.get("default_generation_settings") or {}).get("n_ctx") or 0)
        self.info = ServerInfo(
            url=url,
            alias=alias,
            slots=int(props.get("total_slots") or self.config.parallel),
            slot_ctx=slot_ctx or self.config.slot_ctx,
            threads=self.config.n_threads,
            assemble_s=assemble_s,
            startup_s=time.perf_counter() - t1,
            model=self.model.name,
        )
        return self.info

    def busy_slots(self) -> int | None:
        """How many slots are generating now; None when the server cannot say."""
        if self.info is None:
            return None
        try:
            status, slots = _get_json(f"{self.info.url}/slots", timeout=2)
        except (OSError, ValueError):
            return None
        if status != 200 or not isinstance(slots, list):
            return None
        return sum(1 for s in slots if isinstance(s, dict) and s.get("is_processing"))

    def stop(self) -> None:
        # Dropping the last reference runs the native destructor, which ends the HTTP and
        # inference threads (about 0.1 s).
        self._server = None
        self.info = None
        if self.slot_dir is not None:
            import shutil

            shutil.rmtree(self.slot_dir, ignore_errors=True)
            self.slot_dir = None


def adapter_alias(adapter: Path, model: str = DEFAULT_MODEL) -> str:
    """The served model name with a LoRA adapter applied: the base alias plus the adapter
    file's content hash, so request keys (cache, recordings) of the adapted model never
    answer for the base model or for another adapter."""
    import hashlib

    digest = hashlib.sha256(adapter.read_bytes()).hexdigest()[:12]
    return f"{embedded_model(model).alias}+lora-{digest}"


def _get_json(url: str, timeout: float) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read().decode() or "{}")
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def _wait_healthy(url: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            status, body = _get_json(f"{url}/health", timeout=5)
            if status == 200 and body.get("status") == "ok":
                return _get_json(f"{url}/props", timeout=5)[1]
            last = f"HTTP {status} {body}"
        except (OSError, ValueError) as exc:
            last = str(exc)
        time.sleep(0.2)
    raise EmbeddedModelUnavailable(
        f"the embedded server at {url} was not healthy within {timeout:g}s ({last}); raise "
        "[embedded].startup_timeout or check free memory"
    )


_lock = threading.Lock()
_instances: dict[str, EmbeddedServer] = {}


def ensure_embedded_server(
    config: EmbeddedConfig | None = None,
    progress: Callable[[str], None] | None = None,
    quiet: bool = True,
    adapter: Path | None = None,
    model: str = DEFAULT_MODEL,
) -> EmbeddedServer:
    """The process's server of the embedded model ``model``, started (assembling the model
    once) if needed.

    The first caller's configuration wins for the life of the process. ``adapter``: a
    llama.cpp LoRA adapter GGUF (``workbench train export``) applied to every request; the
    server is then named by :func:`adapter_alias`. Raises
    EmbeddedModelUnavailable with the fix when it cannot run.
    """
    with _lock:
        server = _instances.get(model)
        if server is None or not server.running:
            server = EmbeddedServer(config or EmbeddedConfig(), quiet=quiet, adapter=adapter, model=model)
            server.start(progress)
            _instances[model] = server
        return server


def current_embedded_server(model: str = DEFAULT_MODEL) -> EmbeddedServer | None:
    """The running server of the embedded model ``model``, if any (never starts one)."""
    server = _instances.get(model)
    return server if server is not None and server.running else None


def stop_embedded_server(model: str | None = None) -> None:
    """Stop the server of ``model``, or (None) every embedded server of the process."""
    with _lock:
        for name in [model] if model is not None else list(_instances):
            server = _instances.pop(name, None)
            if server is not None:
                server.stop()


atexit.register(stop_embedded_server)
