"""Test doubles for the model and the encoder: no model, no network, no torch.

``ScriptedTransport`` stands where ``workbench.llm.transport`` would talk to a server, so the
real :class:`~workbench.llm.gateway.Gateway` (validation, repair, retries, usage) runs over
answers a test writes; ``replay_gateway`` answers from recordings of the real model instead;
``HashEncoder`` keeps the dense encoder's contract.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from workbench.llm.config import LlmConfig, load_config
from workbench.llm.fake_server import certain_logprobs
from workbench.llm.gateway import Gateway
from workbench.llm.logprobs import compact_logprobs
from workbench.llm.recording import Replayer
from workbench.llm.transport import AttemptError, RawResponse


class ScriptedTransport:
    """Answers each request with ``respond(request)``: a string is the model's text, a
    :class:`RawResponse` is sent as it is, an exception is raised (as the transport would),
    anything else is sent as JSON. ``fail_on`` fails the n-th call (1-based) as a dropped
    connection would; every request is kept in ``requests``, the failed one too. A request
    asking for log-probabilities gets certain ones (``logprobs=False``: a server without)."""

    def __init__(self, respond: Callable[[dict], Any], *, fail_on: int | None = None,
                 prompt_tokens: int = 100, output_tokens: int = 10, logprobs: bool = True) -> None:
        self.respond = respond
        self.logprobs = logprobs
        self.requests: list[dict] = []
        self.fail_on = fail_on
        self.prompt_tokens, self.output_tokens = prompt_tokens, output_tokens

    def endpoint(self, role) -> str:
        return "scripted"

    def send(self, request, role, *, key):
        self.requests.append(request)
        if self.fail_on is not None and len(self.requests) == self.fail_on:
            raise AttemptError("connection", "scripted outage", retryable=False)
        out = self.respond(request)
        if isinstance(out, Exception):
            raise out
        if isinstance(out, RawResponse):
            return out
        text = out if isinstance(out, str) else json.dumps(out)
        lp = (compact_logprobs({"content": certain_logprobs(text)})
              if self.logprobs and request.get("logprobs") else None)
        return RawResponse(text, "stop", self.prompt_tokens, self.output_tokens, None, "scripted", lp)


def scripted_gateway(transport, config=None) -> Gateway:
    """A gateway over ``transport`` that never sleeps between retries (``config``: the
    default configuration without environment when None)."""
    return Gateway(config if config is not None else load_config(env={}), transport=transport,
                   sleep=lambda s: None)


def default_config(folder: Path) -> LlmConfig:
    """The built-in role settings, whatever ``workbench.toml`` or ``WORKBENCH_*`` variables
    this machine has (an empty configuration file written in ``folder``): recorded requests
    key on them (temperature, max_tokens)."""
    empty = folder / "workbench.toml"
    empty.write_text("")
    return load_config(empty, env={})


def replay_gateway(recordings: Path, folder: Path) -> Gateway:
    """A gateway with the default role settings (``default_config(folder)``) whose model calls
    are answered from ``recordings``; a request not recorded raises ``MissingRecording``."""
    return Gateway(default_config(folder), recorder=Replayer(recordings))


class HashEncoder:
    """Deterministic 384-d unit vectors (the dense encoder's contract, no torch)."""

    def encode(self, texts):
        out = []
        for t in texts:
            h = hashlib.sha256(t.encode()).digest()
            v = np.frombuffer((h * 12)[:384], dtype=np.uint8).astype(np.float32) - 127.5
            out.append(v / np.linalg.norm(v))
        return np.stack(out) if out else np.zeros((0, 384), dtype=np.float32)
