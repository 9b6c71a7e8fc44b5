"""The judge's hidden states from its own reading of the prompt: one pass, not two.

The embedded judge answers from llama.cpp's server (``workbench.llm.embedded``), which keeps
its hidden states to itself. Reading them used to mean a second forward pass over the same
prompt (transformers, ~1.1x the judge's time again). Here the prompt is read *once*, in this
process, by :class:`JudgeReader` (llama.cpp's C API on the same GGUF,
``workbench.llm.native``), which keeps the layers a scorer needs; the KV cache it filled is
saved to a state file and restored into a server slot (``POST /slots/N?action=restore``),
and the judge's request is sent to that slot: the server finds the whole prompt already read
and only generates. Measured on 2 cores, one demo case of 2,846 tokens: reading + restore
55.4 s + answer 3.3 s against 57.2 s for the judge alone (1.02x), the same answer.

:class:`OnePass` is what a gateway carries (``Gateway.onepass``) for its judge calls; the
audit takes each case's reading with :meth:`OnePass.take` (``workbench.audit.activations``)
and reads the prompt itself (no generation) when the answer came from the response cache.
The request sent is the keyed request: the slot travels beside it (``extra_body``), so cache
keys and recordings do not change. When a restore fails the server simply reads the prompt
again (counted in :attr:`OnePass.fallbacks`); the answer never depends on the pass.

The prompt is rendered with the ChatML template of the embedded (Qwen2.5) models and
tokenized by llama.cpp: on the 21 demo prompts both are identical, token for token, to what
the server renders and tokenizes (``tests/test_onepass_model.py`` checks it on the real model).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.decision.features import POOLINGS, feature_id, pool, prompt_sha
from workbench.llm.native import NativeModel, NativeUnavailable

log = logging.getLogger(__name__)

# Every second layer of the 1.5B model's 28 (the last one after the final norm, read at the
# last token only); a few hundred KB a case at float16 with the reply poolings.
DEFAULT_STRIDE = 2
KEEP_READINGS = 64  # readings waiting to be taken (a retried or re-asked call adds one)


def chatml(messages: Sequence[dict[str, str]]) -> str:
    """The embedded models' chat template (Qwen2.5's ChatML, with its default system turn
    when none is given), the assistant turn opened for the answer."""
    out = "" if messages and messages[0]["role"] == "system" else (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n")
    for m in messages:
        out += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def reply_span(prompt: str, pieces: Sequence[bytes]) -> tuple[int, int] | None:
    """The token positions ``[start, end)`` of the audited reply inside a judging prompt
    (the text between the last ``<reply>`` and ``</reply>`` tags), or None when the pieces
    do not spell the prompt or the tags are not there."""
    data = prompt.encode("utf-8")
    if b"".join(pieces) != data:
        return None
    end = data.rfind(b"\n</reply>")
    start = data.rfind(b"<reply>\n", 0, end)
    if start < 0 or end < 0:
        return None
    start += len(b"<reply>\n")
    first = last = None
    at = 0
    for i, p in enumerate(pieces):
        a, b = at, at + len(p)
        at = b
        if b > start and a < end:
            first = i if first is None else first
            last = i
    return None if first is None else (first, last + 1)


@dataclass(frozen=True)
class Reading:
    """One prompt read: ``array`` ``[features, hidden]`` float32 with ``features`` its ids
    (``workbench.decision.features.feature_id``)."""

    array: np.ndarray
    features: tuple[int, ...]
    prompt_tokens: int
    reply_tokens: int
    seconds: float

    # ``workbench.audit.activations.capture_run`` reads what the transformers reader gave.
    @property
    def layers(self) -> tuple[int, ...]:
        return self.features


class JudgeReader:
    """Reads judging prompts with the judge's own weights (see the module doc). ``model``:
    ``embedded`` / ``embedded:<name>`` or a .gguf path of the same (ChatML) family;
    ``slots``: the server's slot count (a saved sequence must match it)."""

    def __init__(self, model: str = "embedded", *, layers: Sequence[int] | None = None,
                 slots: int = 1, threads: int | None = None,
                 cache_dir: str | None = None) -> None:
        from workbench.llm.weights import DEFAULT_MODEL, assembled_path
        from workbench.llm.weights import cache_dir as model_cache

        if model == "embedded" or model.startswith("embedded:"):
            name = model.partition(":")[2] or DEFAULT_MODEL
            path = assembled_path(model_cache(cache_dir), model=name)
            model = "embedded" if name == DEFAULT_MODEL else f"embedded:{name}"
        else:
            path = Path(model)
            if path.suffix != ".gguf" or not path.is_file():
                raise NativeUnavailable(f"{model}: not a .gguf file",
                                        "give embedded, embedded:small or a .gguf path")
        self.source = model  # as features records name it (one name per model)
        probe = NativeModel(path, layers=[1], n_seq=slots, threads=threads)
        n = probe.n_layer
        probe.close()
        self.layers = tuple(layers) if layers else tuple(range(DEFAULT_STRIDE, n + 1, DEFAULT_STRIDE))
        self.n_layer = n
        self.model = NativeModel(path, layers=self.layers, n_seq=slots, threads=threads)
        self.lock = threading.RLock()

    @property
    def feature_ids(self) -> tuple[int, ...]:
        """What a reading holds (``pool``): every layer at the last prompt token, and the
        reply's poolings of every layer but the model's last, whose rows llama.cpp prunes to
        the output token."""
        return tuple(feature_id(p, layer) for p in POOLINGS for layer in self.layers
                     if p == "last" or layer < self.n_layer)

    def tokens(self, messages: Sequence[dict[str, str]]) -> tuple[str, list[int]]:
        prompt = chatml(messages)
        return prompt, self.model.tokenize(prompt)

    def _read(self, prompt: str, ids: list[int]) -> Reading:
        got = self.model.prefill(ids)
        span = reply_span(prompt, [self.model.piece(t) for t in ids])
        features, array = pool(got.rows, span, self.layers, POOLINGS)
        return Reading(array, tuple(features), len(ids), 0 if span is None else span[1] - span[0],
                       got.seconds)

    def read(self, messages: Sequence[dict[str, str]]) -> Reading:
        """Read the prompt (no answer): its features."""
        prompt, ids = self.tokens(messages)
        with self.lock:
            return self._read(prompt, ids)

    def read_and_save(self, messages: Sequence[dict[str, str]], path: Path) -> tuple[Reading, bool]:
        """Read the prompt and save its KV cache to ``path`` for a server slot (under one
        lock, so no other prompt is read in between); ``(reading, saved)``."""
        prompt, ids = self.tokens(messages)
        with self.lock:
            reading = self._read(prompt, ids)
            saved = self.model.save_sequence(path, ids) > 0
        return reading, saved

    def capture(self, messages: Sequence[dict[str, str]]) -> Reading:
        """``workbench features capture``'s reader interface (see ``capture_run``)."""
        return self.read(messages)

    def close(self) -> None:
        self.model.close()


class OnePass:
    """The judge's calls read once (see the module doc): the first ask of a whole-context
    verdict (gateway step ``judge:<case>:<strategy>``, :meth:`wants`); its repairs, evidence
    re-asks and sampled answers are left to the server's own prompt cache."""

    @staticmethod
    def wants(step: str) -> bool:
        if not step.startswith("judge:"):
            return False
        last = step.rsplit(":", 1)[-1]
        return last != "evidence" and not last.startswith(("sample", "part"))

    def __init__(self, model: str = "embedded", *, slots: int = 1,
                 layers: Sequence[int] | None = None, threads: int | None = None,
                 cache_dir: str | None = None) -> None:
        """``slots``: the server's slot count (``[embedded].parallel``): a saved sequence
        restores only into a server with as many."""
        self._model, self._layers, self._threads, self._cache_dir = model, layers, threads, cache_dir
        self.slots = max(1, int(slots))
        self._reader: JudgeReader | None = None
        self._made = threading.Lock()
        self._free: queue.Queue[int] | None = None
        self._readings: OrderedDict[str, Reading] = OrderedDict()
        self._kept = threading.Lock()
        self.restored = 0
        self.fallbacks = 0
        self.read_seconds = 0.0
        self.failures: list[str] = []  # readings that failed (the judge answered anyway)

    @property
    def source(self) -> str:
        """The model's name as features records keep it (``embedded``, ``embedded:small``)."""
        return self.reader().source

    def reader(self) -> JudgeReader:
        with self._made:
            if self._reader is None:
                self._reader = JudgeReader(self._model, layers=self._layers, slots=self.slots,
                                           threads=self._threads, cache_dir=self._cache_dir)
                self._free = queue.Queue()
                for i in range(self.slots):
                    self._free.put(i)
            return self._reader

    def _keep(self, messages: Sequence[dict[str, str]], reading: Reading) -> None:
        with self._kept:
            self._readings[prompt_sha(messages)] = reading
            while len(self._readings) > KEEP_READINGS:
                self._readings.popitem(last=False)

    def take(self, messages: Sequence[dict[str, str]]) -> Reading | None:
        """The reading of ``messages`` made during the judge's call, once; None when the
        call did not go through here (a cached answer, another transport)."""
        with self._kept:
            return self._readings.pop(prompt_sha(messages), None)

    def lease(self, request: dict[str, Any], server: Any) -> int | None:
        """Read ``request``'s prompt and put it in a free slot of ``server`` (an
        ``EmbeddedServer`` started with a slot folder); the slot id to send the request to,
        to be given back with :meth:`release`, or None (the server reads the prompt itself)."""
        reader = self.reader()
        assert self._free is not None
        if server.info is None or server.info.slots != self.slots:
            self._keep(request["messages"], reader.read(request["messages"]))
            self.fallbacks += 1
            return None
        messages = request["messages"]
        folder = server.slot_dir
        name = f"onepass-{uuid.uuid4().hex}.bin"
        if folder is None:
            self._keep(messages, reader.read(messages))
            self.fallbacks += 1
            return None
        path = Path(folder) / name
        try:
            reading, saved = reader.read_and_save(messages, path)
            self.read_seconds += reading.seconds
            self._keep(messages, reading)
            slot = self._free.get()
            if saved and _restore(server.url, slot, name):
                self.restored += 1
                return slot
            self._free.put(slot)
        finally:
            path.unlink(missing_ok=True)
        self.fallbacks += 1
        return None

    def release(self, slot: int | None) -> None:
        if slot is not None and self._free is not None:
            self._free.put(slot)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def _restore(url: str, slot: int, name: str) -> bool:
    body = json.dumps({"filename": name}).encode()
    req = urllib.request.Request(f"{url}/slots/{slot}?action=restore", data=body,
                                 headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            ok = resp.status == 200
    except (urllib.error.URLError, OSError) as exc:
        log.warning("could not restore the read prompt into slot %s (%s); the server reads it "
                    "again", slot, exc)
        return False
    log.debug("restored slot %s in %.3f s", slot, time.perf_counter() - started)
    return ok
