"""Recorded model responses: record real exchanges once, replay them in tests.

A recording file is JSON lines, one ``{"key", "role", "request", "response"}`` per HTTP
exchange (a repair attempt is its own exchange), appended as calls complete. The request is
the keyed request (no address, no key, no timeout). ``Replayer`` answers only from the
file: a request without a recording raises :class:`MissingRecording`; it never falls back
to a live model and never invents an answer.

Near-greedy temperatures are one key class in replay only: a recording made at temperature
``t <= GREEDY_EQUIVALENT`` (0.01) answers a request at any ``t' <= 0.01`` that is otherwise
identical. At t = 0.01 a token 0.1 logits behind the best has probability < e^-10 of being
sampled, so both are the model's greedy answer; the recordings predate the switch of the
extractor, fuser and keyworder defaults from 0.0 to the first paper's 0.01. The response cache and
recording keys stay exact (``workbench.llm.cache``), so live calls never mix the two.

Select a mode for ``Gateway.from_env()`` with ``WORKBENCH_LLM_MODE=live|record|replay`` and
``WORKBENCH_LLM_RECORDINGS=path`` (a ``.jsonl`` file; for replay also a folder of them).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

from workbench.llm.cache import request_key
from workbench.llm.config import RoleConfig
from workbench.llm.errors import LlmConfigError, MissingRecording
from workbench.llm.transport import RawResponse, Transport
from workbench.settings import LLM_MODE, LLM_RECORDINGS

MODES = ("live", "record", "replay")
GREEDY_EQUIVALENT = 0.01


def greedy_key(request: dict[str, Any]) -> str | None:
    """The key of ``request`` with a near-greedy temperature normalised to 0 (None when its
    temperature is above :data:`GREEDY_EQUIVALENT` or missing)."""
    t = request.get("temperature")
    if not isinstance(t, int | float) or isinstance(t, bool) or not 0 <= t <= GREEDY_EQUIVALENT:
        return None
    return request_key({**request, "temperature": 0.0})


class Recorder:
    """Wraps a live transport and appends every successful exchange to ``path``."""

    def __init__(self, path: str | os.PathLike[str], inner: Transport | None = None) -> None:
        self.path = Path(path).expanduser().resolve()  # a later chdir must not move it
        if self.path.is_dir():
            raise LlmConfigError(f"record mode needs a .jsonl file, but {self.path} is a folder")
        self._inner = inner
        self._lock = threading.Lock()

    def bind(self, live: Transport) -> Recorder:
        """Use ``live`` for the real calls unless an inner transport was given."""
        if self._inner is None:
            self._inner = live
        return self

    def endpoint(self, role: RoleConfig) -> str:
        return self._require_inner().endpoint(role)

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse:
        response = self._require_inner().send(request, role, key=key)
        line = json.dumps(
            {"key": key, "role": role.name, "request": request, "response": response.to_json()},
            ensure_ascii=False,
            sort_keys=True,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        return response

    def _require_inner(self) -> Transport:
        if self._inner is None:
            raise RuntimeError("Recorder has no live transport; pass it to Gateway(recorder=...)")
        return self._inner


class Replayer:
    """Answers requests from recording files by request key; nothing else."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser().resolve()
        if self.path.is_dir():
            files = sorted(self.path.glob("*.jsonl"))
        elif self.path.is_file():
            files = [self.path]
        else:
            raise LlmConfigError(
                f"replay mode: recordings {self.path} do not exist. Record them first with "
                f"{LLM_MODE.name}=record {LLM_RECORDINGS.name}={self.path} and the command that "
                "makes the calls"
            )
        self._responses: dict[str, RawResponse] = {}
        self._greedy: dict[str, RawResponse] = {}
        for file in files:
            self._load(file)

    def _load(self, file: Path) -> None:
        with open(file, encoding="utf-8") as src:
            for number, line in enumerate(src, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    response = RawResponse.from_json(entry["response"])
                    self._responses[entry["key"]] = response
                    near = greedy_key(entry["request"]) if isinstance(entry.get("request"), dict) else None
                    if near is not None:
                        self._greedy.setdefault(near, response)
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise LlmConfigError(
                        f"recording {file} line {number} is damaged ({exc}); re-record the file"
                    ) from None

    def __len__(self) -> int:
        return len(self._responses)

    def __contains__(self, key: str) -> bool:
        return key in self._responses

    def endpoint(self, role: RoleConfig) -> str:
        return f"recordings {self.path}"

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse:
        if key in self._responses:
            return self._responses[key]
        near = greedy_key(request)
        if near is not None and near in self._greedy:
            return self._greedy[near]
        raise MissingRecording(
            key=key,
            role=role.name,
            preview=_preview(request),
            source=str(self.path),
            record_hint=_record_hint(self.path),
        )


def transport_from_env(env: dict[str, str] | os._Environ[str] | None = None) -> Any:
    """The Recorder or Replayer the environment asks for, or None for live calls."""
    env = os.environ if env is None else env
    mode = (LLM_MODE.read(env) or "live").strip().lower()
    if mode not in MODES:
        raise LlmConfigError(f"{LLM_MODE.name}={mode!r} is not one of {', '.join(MODES)}")
    if mode == "live":
        return None
    path = LLM_RECORDINGS.read(env)
    if not path:
        raise LlmConfigError(f"{LLM_MODE.name}={mode} needs {LLM_RECORDINGS.name}=<path to a .jsonl file>")
    return Recorder(path) if mode == "record" else Replayer(path)


def _preview(request: dict[str, Any], limit: int = 240) -> str:
    messages = request.get("messages") or []
    last = messages[-1].get("content", "") if messages and isinstance(messages[-1], dict) else ""
    text = " ".join(str(last).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("name")
    extra = f", schema {schema}" if schema else ""
    return f"model {request.get('model')}{extra}, {len(messages)} messages, last: {text!r}"


def _record_hint(path: Path) -> str:
    target = path if path.suffix == ".jsonl" else path / "new.jsonl"
    argv = list(sys.argv) or ["<command>"]
    if Path(argv[0]).name in ("pytest", "__main__.py", "py.test") and "pytest" in argv[0]:
        argv = [".venv/bin/python", "-m", "pytest", *argv[1:]]
    elif argv[0].endswith(".py"):
        argv = [".venv/bin/python", *argv]
    command = shlex.join(argv)
    return f"{LLM_MODE.name}=record {LLM_RECORDINGS.name}={target} {command}"
