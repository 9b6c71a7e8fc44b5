"""llama.cpp's C API through ctypes, on the library the embedded server already ships.

The embedded judge runs in ``xllamacpp``, whose one extension module is llama.cpp built as a
shared object that also exports the C API (``llama_*``, ``ggml_*``). This module binds the
few functions the workbench needs to *read* the judge, in this process and from the same
GGUF file, with no torch and no second copy of the model code:

* a **prefill** of a token sequence, with llama.cpp's evaluation callback (``cb_eval``)
  handing over the rows of the layer outputs asked for (``l_out-<il>``, every position of
  the prompt; the last layer's rows are pruned by llama.cpp to the output token, so the last
  layer is read at the last position only, after the final norm: ``result_norm``);
* saving the prefilled sequence's KV cache to a file the server can load into a slot
  (``llama_state_seq_save_file``, ``POST /slots/N?action=restore``): the judge then answers
  from the prompt already read, so its hidden states cost no second pass
  (``workbench.llm.onepass``).

Layer numbering follows the hidden-state convention the scorers were first fitted with (a
transformers forward pass): index ``i`` is the output of block ``i`` (1-based), so llama.cpp's
``l_out-(i-1)``; index ``n_layer`` is the final normed state.

The C structs are passed as opaque byte buffers filled from llama.cpp's own defaults; only
the fields set here have known offsets, and those are checked against the defaults the
library returns before anything runs (:func:`library`), so a build whose struct layout
moved fails with a message naming the version the workbench knows, never with a crash
mid-run. Measured here (2 cores): the callback costs about 1 % of the prefill (55.9 vs 55.2
prompt tokens/s, 1,867 tokens, 14 layers read).
"""

from __future__ import annotations

import ctypes as C
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError

KNOWN_XLLAMACPP = "2026.10.11549"  # the build whose struct offsets are below (pinned in the lock)
UBATCH = 512  # tokens per llama_decode call: the positions of every row are known
_RAW = 512  # bytes of the opaque param buffers (the real structs are smaller)

# Offsets in llama_context_params of the xllamacpp build above (read off its defaults).
_N_CTX, _N_BATCH, _N_UBATCH, _N_SEQ_MAX = 0, 4, 8, 12
_N_THREADS, _N_THREADS_BATCH = 28, 32
_YARN_FLOATS = 64  # four floats, -1.0 by default
_CB_EVAL, _CB_EVAL_USER = 88, 96
_TYPE_K, _TYPE_V = 104, 108

_EVAL_CB = C.CFUNCTYPE(C.c_bool, C.c_void_p, C.c_bool, C.c_void_p)
_LOG_CB = C.CFUNCTYPE(None, C.c_int, C.c_char_p, C.c_void_p)


class NativeUnavailable(WorkbenchError, RuntimeError):
    """The llama.cpp library cannot be used to read the judge (named, with the fix)."""

    fatal = True


class _Raw(C.Structure):
    _fields_ = [("raw", C.c_uint8 * _RAW)]


class _Batch(C.Structure):
    _fields_ = [("n_tokens", C.c_int32), ("token", C.POINTER(C.c_int32)), ("embd", C.c_void_p),
                ("pos", C.c_void_p), ("n_seq_id", C.c_void_p), ("seq_id", C.c_void_p),
                ("logits", C.c_void_p)]


_lib: C.CDLL | None = None
_lib_lock = threading.Lock()
_quiet_log = _LOG_CB(lambda level, text, user: None)  # kept alive for the process


def _signatures(lib: C.CDLL) -> None:
    p, i32, sz = C.c_void_p, C.c_int32, C.c_size_t
    table = {
        "llama_backend_init": (None, []),
        "llama_model_default_params": (_Raw, []),
        "llama_context_default_params": (_Raw, []),
        "llama_model_load_from_file": (p, [C.c_char_p, _Raw]),
        "llama_model_free": (None, [p]),
        "llama_init_from_model": (p, [p, _Raw]),
        "llama_free": (None, [p]),
        "llama_model_get_vocab": (p, [p]),
        "llama_model_n_embd": (i32, [p]),
        "llama_model_n_layer": (i32, [p]),
        "llama_tokenize": (i32, [p, C.c_char_p, i32, C.POINTER(i32), i32, C.c_bool, C.c_bool]),
        "llama_token_to_piece": (i32, [p, i32, C.c_char_p, i32, i32, C.c_bool]),
        "llama_batch_get_one": (_Batch, [C.POINTER(i32), i32]),
        "llama_decode": (i32, [p, _Batch]),
        "llama_get_memory": (p, [p]),
        "llama_memory_clear": (None, [p, C.c_bool]),
        "llama_state_seq_save_file": (sz, [p, C.c_char_p, i32, C.POINTER(i32), sz]),
        "llama_log_set": (None, [p, p]),
        "ggml_get_name": (C.c_char_p, [p]),
        "ggml_backend_tensor_get": (None, [p, p, sz, sz]),
    }
    for name, (restype, argtypes) in table.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def _check_layout(lib: C.CDLL) -> None:
    raw = bytes(lib.llama_context_default_params().raw)
    head = struct.unpack_from("<IIII", raw, 0)
    threads = struct.unpack_from("<ii", raw, _N_THREADS)
    yarn = struct.unpack_from("<ffff", raw, _YARN_FLOATS)
    cb = struct.unpack_from("<QQ", raw, _CB_EVAL)
    kv = struct.unpack_from("<ii", raw, _TYPE_K)
    if (head != (512, 2048, 512, 1) or threads[0] != threads[1] or threads[0] < 1
            or yarn != (-1.0, -1.0, -1.0, -1.0) or cb != (0, 0) or kv != (1, 1)):
        raise NativeUnavailable(
            "this xllamacpp build lays out llama_context_params differently from the build "
            f"the workbench reads ({KNOWN_XLLAMACPP}), so the judge's activations cannot be "
            "read from it",
            f"install the pinned build: pip install xllamacpp=={KNOWN_XLLAMACPP}, or audit "
            "with --no-activations",
        )


def library() -> C.CDLL:
    """The llama.cpp library of the installed xllamacpp, bound and checked (once)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        # llama.cpp's OpenMP threads must wait passively on shared cores (see
        # workbench.llm.embedded); set before the library first loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp
        except ImportError as exc:
            raise NativeUnavailable(
                f"xllamacpp, which holds the embedded model's llama.cpp, is not installed ({exc})",
                f"install it: pip install xllamacpp=={KNOWN_XLLAMACPP} (make install does)",
            ) from None
        folder = Path(xllamacpp.__file__).parent
        found = sorted(folder.glob("xllamacpp*.so")) + sorted(folder.glob("xllamacpp*.pyd"))
        if not found:
            raise NativeUnavailable(f"no llama.cpp library in {folder}",
                                    f"reinstall it: pip install xllamacpp=={KNOWN_XLLAMACPP}")
        lib = C.CDLL(str(found[0]))
        try:
            _signatures(lib)
        except AttributeError as exc:
            raise NativeUnavailable(f"the llama.cpp library in {folder} lacks {exc}",
                                    f"install xllamacpp=={KNOWN_XLLAMACPP}") from None
        _check_layout(lib)
        lib.llama_backend_init()
        _lib = lib
        return lib


def quiet_logs() -> None:
    """Silence llama.cpp's per-load log lines on stderr (they also come from the server)."""
    library().llama_log_set(C.cast(_quiet_log, C.c_void_p), None)


@dataclass(frozen=True)
class Prefilled:
    """What one prefill read: ``rows[layer]`` is ``[tokens, hidden]`` float32 for every
    position; for the last layer llama.cpp keeps only the output row of each decoded batch
    of :data:`UBATCH` tokens, so its last row is the last position's."""

    rows: dict[int, np.ndarray]
    tokens: int
    seconds: float


class NativeModel:
    """One GGUF loaded through the C API, with one reading context (``n_seq`` streams so a
    saved sequence fits a server with as many slots: llama.cpp refuses a state file whose
    stream count differs). Not thread-safe: one prefill at a time (:attr:`lock`)."""

    def __init__(self, path: Path | str, *, layers: Sequence[int], n_seq: int = 1,
                 threads: int | None = None, quiet: bool = True) -> None:
        lib = library()
        if quiet:
            quiet_logs()
        self._lib = lib
        self.path = str(path)
        self.lock = threading.Lock()
        self.model = lib.llama_model_load_from_file(self.path.encode(), lib.llama_model_default_params())
        if not self.model:
            raise NativeUnavailable(f"llama.cpp could not load {self.path}",
                                    "check the file (delete it to have it assembled again) and free memory")
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_embd = int(lib.llama_model_n_embd(self.model))
        self.n_layer = int(lib.llama_model_n_layer(self.model))
        self.layers = tuple(int(x) for x in layers)
        bad = [x for x in self.layers if not 1 <= x <= self.n_layer]
        if bad:
            raise NativeUnavailable(f"layers {bad} are outside 1..{self.n_layer} of {self.path}",
                                    "choose hidden-state indices between 1 and the layer count")
        self.n_seq = max(1, int(n_seq))
        self.threads = int(threads or os.cpu_count() or 1)
        self._names = {f"l_out-{x - 1}".encode(): x for x in self.layers if x < self.n_layer}
        if self.n_layer in self.layers:
            self._names[b"result_norm"] = self.n_layer
        self._rows: dict[int, list[np.ndarray]] = {}
        self._callback = _EVAL_CB(self._on_tensor)  # kept alive as long as the context
        self.ctx = None
        self._ctx_tokens = 0

    # -- reading ------------------------------------------------------------------------

    def _on_tensor(self, tensor: int, ask: bool, user: int) -> bool:
        name = self._lib.ggml_get_name(tensor)
        if ask:
            return name in self._names
        # ggml_tensor: enum ggml_type type (GGML_TYPE_F32 = 0); buffer; int64 ne[4]
        kind = C.c_int32.from_address(tensor).value
        ne = (C.c_int64 * 4).from_address(tensor + 16)
        buf = np.empty((int(ne[1]), int(ne[0])), dtype=np.float32)
        if kind == 0 and buf.shape[1] == self.n_embd:
            self._lib.ggml_backend_tensor_get(tensor, buf.ctypes.data, 0, buf.nbytes)
            self._rows.setdefault(self._names[name], []).append(buf)
        return True

    def _context(self, tokens: int) -> None:
        """A context whose every stream holds ``tokens`` (made again, larger, when needed)."""
        per_stream = max(4096, -(-tokens // 1024) * 1024)
        if self.ctx is not None and per_stream <= self._ctx_tokens:
            return
        self.close_context()
        lib = self._lib
        raw = bytearray(lib.llama_context_default_params().raw)
        struct.pack_into("<IIII", raw, _N_CTX, per_stream * self.n_seq, UBATCH, UBATCH, self.n_seq)
        struct.pack_into("<ii", raw, _N_THREADS, self.threads, self.threads)
        struct.pack_into("<Q", raw, _CB_EVAL, C.cast(self._callback, C.c_void_p).value)
        params = _Raw()
        C.memmove(params.raw, bytes(raw), _RAW)
        ctx = lib.llama_init_from_model(self.model, params)
        if not ctx:
            raise NativeUnavailable(
                f"llama.cpp could not make a {per_stream * self.n_seq}-token reading context",
                "free memory (each 1,000 tokens of context take about 30 MB for the 1.5B model)")
        self.ctx, self._ctx_tokens = ctx, per_stream

    def tokenize(self, text: str) -> list[int]:
        """``text`` (a rendered chat prompt, special tokens written out) as token ids."""
        data = text.encode("utf-8")
        cap = len(data) + 16
        out = (C.c_int32 * cap)()
        n = self._lib.llama_tokenize(self.vocab, data, len(data), out, cap, False, True)
        if n < 0:
            raise NativeUnavailable(f"llama.cpp could not tokenize the prompt ({n})",
                                    "report this prompt; audit with --no-activations meanwhile")
        return list(out[:n])

    def piece(self, token: int) -> bytes:
        buf = C.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self.vocab, int(token), buf, 64, 0, True)
        if n < 0:
            buf = C.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self.vocab, int(token), buf, -n, 0, True)
        return buf.raw[:max(0, n)]

    def prefill(self, ids: Sequence[int]) -> Prefilled:
        """Read ``ids`` from an empty sequence 0, keeping the rows of :attr:`layers`."""
        import time

        if not ids:
            raise ValueError("nothing to read: the prompt has no tokens")
        with self.lock:
            self._context(len(ids))
            lib = self._lib
            lib.llama_memory_clear(lib.llama_get_memory(self.ctx), True)
            self._rows = {}
            started = time.perf_counter()
            for s in range(0, len(ids), UBATCH):
                chunk = list(ids[s:s + UBATCH])
                arr = (C.c_int32 * len(chunk))(*chunk)
                rc = lib.llama_decode(self.ctx, lib.llama_batch_get_one(arr, len(chunk)))
                if rc != 0:
                    raise NativeUnavailable(f"llama.cpp stopped reading the prompt (code {rc})",
                                            "free memory, or audit with --no-activations")
            seconds = time.perf_counter() - started
            rows = {k: np.concatenate(v) for k, v in self._rows.items()}
            self._rows = {}
        missing = [x for x in self.layers if x not in rows]
        if missing:
            raise NativeUnavailable(f"llama.cpp gave no output for layers {missing}",
                                    f"this build names its layer outputs differently; install "
                                    f"xllamacpp=={KNOWN_XLLAMACPP}")
        return Prefilled(rows, len(ids), seconds)

    def save_sequence(self, path: Path | str, ids: Sequence[int]) -> int:
        """Write sequence 0 (what :meth:`prefill` last read) as a llama.cpp state file a server
        with :attr:`n_seq` slots can restore; returns the bytes written (0: failed)."""
        with self.lock:
            arr = (C.c_int32 * len(ids))(*ids)
            return int(self._lib.llama_state_seq_save_file(self.ctx, str(path).encode(), 0, arr,
                                                           len(ids)))

    def close_context(self) -> None:
        if self.ctx is not None:
            self._lib.llama_free(self.ctx)
            self.ctx, self._ctx_tokens = None, 0

    def close(self) -> None:
        with self.lock:
            self.close_context()
            if self.model:
                self._lib.llama_model_free(self.model)
                self.model = None
