"""A scripted, fault-injecting OpenAI-compatible server for tests (no model behind it).

    with FakeChatServer([status(429), reply({"ok": True})]) as srv:
        config = load_config(env=role_env(srv.api_base, role="judge"))
        ...
        srv.requests        # the JSON bodies it received, in order

Each POST to ``/v1/chat/completions`` consumes the next scripted action; when the script
is empty the ``default`` action (or callable of the request body) answers. Actions cover
what real servers do wrong: HTTP errors with or without ``Retry-After``, answers that come
too late, bodies that are not JSON or are cut off, answers without choices, and dropped
connections. Other teams can script model answers for their own pipeline tests with it.
A request asking for log-probabilities gets them (``logprobs=False`` plays a server
without them).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from workbench.vocabulary import ModelRole


@dataclass(frozen=True)
class Action:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    cut_at: int | None = None  # announce the whole body, send this many bytes, hang up


def reply(
    content: str | dict[str, Any],
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 5,
    finish_reason: str = "stop",
    model: str = "fake-model",
    logprobs: list[dict[str, Any]] | None = None,
) -> Action:
    """A well-formed chat completion whose message content is ``content`` (dicts as JSON).
    ``logprobs``: the OpenAI ``choices[0].logprobs.content`` entries to send (otherwise a
    server that gives log-probabilities sends certain ones, see :func:`certain_logprobs`)."""
    text = content if isinstance(content, str) else json.dumps(content)
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
                **({"logprobs": {"content": logprobs}} if logprobs is not None else {}),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Action(body=json.dumps(body).encode())


_PIECE = re.compile(r"\s*\w+|\s*\S")


def certain_logprobs(text: str) -> list[dict[str, Any]]:
    """Log-probabilities of a model sure of every token of ``text`` (logprob 0, no other
    candidate): what a scripted server that supports them returns by default, so a verdict
    read from them has probability 1 or 0."""
    return [{"token": m.group(), "logprob": 0.0, "top_logprobs": []}
            for m in _PIECE.finditer(text)]


def with_logprobs(action: Action) -> Action:
    """``action`` with certain log-probabilities added to a chat completion lacking them."""
    if action.status != 200 or not action.body:
        return action
    try:
        body = json.loads(action.body)
        choice = body["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return action
    if not isinstance(choice, dict) or choice.get("logprobs") is not None:
        return action
    content = (choice.get("message") or {}).get("content") or ""
    choice["logprobs"] = {"content": certain_logprobs(str(content))}
    return replace(action, body=json.dumps(body).encode())


def status(code: int, message: str = "injected failure", retry_after: float | None = None) -> Action:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    body = json.dumps({"error": {"message": message, "type": "server_error", "code": code}})
    return Action(status=code, body=body.encode(), headers=headers)


def hang(seconds: float, then: Action | None = None) -> Action:
    """Answer only after ``seconds`` (longer than the client's timeout, usually)."""
    base = then or reply({"ok": True})
    return Action(base.status, base.body, dict(base.headers), delay_s=seconds)


def raw(body: str | bytes, status_code: int = 200) -> Action:
    return Action(status=status_code, body=body.encode() if isinstance(body, str) else body)


def empty_choices() -> Action:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "fake", "choices": []}
    return raw(json.dumps(body))


def truncated_body() -> Action:
    """A 200 whose body stops mid-way (the connection closes early), as when a proxy or a
    crashing server cuts the transfer."""
    whole = reply({"ok": True}).body
    return Action(body=whole, cut_at=len(whole) // 2)


def drop() -> Action:
    """Close the connection without any response."""
    return Action(drop=True)


Responder = Callable[[dict[str, Any]], Action]


def request_tokens(body: dict[str, Any]) -> int:
    """What a request asks of a context window: its messages' cl100k tokens plus the answer
    room (``max_tokens``), as a llama.cpp slot counts it (up to the tokenizer)."""
    from workbench.llm.tokens import count_tokens

    messages = body.get("messages") or []
    prompt = sum(count_tokens(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    return prompt + int(body.get("max_tokens") or 0)


def window_limited(window: int, answer: Responder) -> Responder:
    """A responder for a server whose requests hold at most ``window`` tokens: larger ones
    get the HTTP 400 llama.cpp sends, the others are answered by ``answer``."""

    def respond(body: dict[str, Any]) -> Action:
        need = request_tokens(body)
        if need > window:
            return status(
                400,
                f"the request exceeds the available context size ({need} > {window} tokens), "
                "try increasing it",
            )
        return answer(body)

    return respond


def role_env(api_base: str, role: str = ModelRole.JUDGE, **settings: Any) -> dict[str, str]:
    """``WORKBENCH_*`` variables pointing ``role`` at a fake server, for ``load_config(env=)``.

    Retries back off briefly (10 ms) so fault tests stay fast; pass settings to override,
    e.g. ``role_env(srv.api_base, timeout=0.5, retries=0)``.
    """
    prefix = f"WORKBENCH_{role.upper()}_"
    env = {
        prefix + "MODEL": "openai/fake-model",
        prefix + "API_BASE": api_base,
        prefix + "RETRY_BACKOFF": "0.01",
        prefix + "TIMEOUT": "5",
    }
    env.update({prefix + k.upper(): str(v) for k, v in settings.items()})
    return env


class FakeChatServer:
    """An OpenAI-compatible server on 127.0.0.1 (free port) playing a script of actions."""

    def __init__(self, script: Iterable[Action] = (), default: Action | Responder | None = None,
                 *, logprobs: bool = True) -> None:
        """``logprobs``: answer a request that asks for log-probabilities with them (certain
        ones unless the scripted reply brings its own), as llama.cpp and vLLM do; False
        plays a server that ignores the request."""
        self.logprobs = logprobs
        self._script: deque[Action] = deque(script)
        self._default = default if default is not None else reply({"ok": True})
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[Any] = set()  # open client sockets, for kill()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeChatServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def push(self, *actions: Action) -> None:
        with self._lock:
            self._script.extend(actions)

    def _next(self, body: dict[str, Any]) -> Action:
        with self._lock:
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
        return self._default(body) if callable(self._default) else self._default

    def start(self) -> FakeChatServer:
        handler = type("Handler", (_Handler,), {"owner": self})

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

        self._httpd = Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def kill(self) -> None:
        """Die as a crashed server does: stop listening and cut every open connection.

        ``stop`` alone leaves keep-alive connections served by their threads, so a client
        with a pooled connection would never notice the server went away.
        """
        self.stop()
        with self._lock:
            connections = list(self._connections)
            self._connections.clear()
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(2)

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    """The HTTP side of a :class:`FakeChatServer` (``owner``, bound per server by ``start``)."""

    owner: FakeChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._connections.add(self.connection)

    def finish(self) -> None:
        with self.owner._lock:
            self.owner._connections.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(Action(body=b'{"status":"ok"}'))
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(Action(body=b'{"object":"list","data":[{"id":"fake-model"}]}'))
        else:
            self._send(status(404, "not found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(status(404, f"no route {self.path}"))
            return
        try:
            body = json.loads(data or b"{}")
        except json.JSONDecodeError:
            self._send(status(400, "request body is not JSON"))
            return
        with self.owner._lock:
            self.owner.headers.append({k.lower(): v for k, v in self.headers.items()})
        action = self.owner._next(body)
        if self.owner.logprobs and body.get("logprobs"):
            action = with_logprobs(action)
        if action.delay_s:
            time.sleep(action.delay_s)
        if action.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
            return
        self._send(action)

    def _send(self, action: Action) -> None:
        with contextlib.suppress(OSError):  # the client gave up (timeout): nothing to tell it
            self.send_response(action.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(action.body)))
            for name, value in action.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if action.cut_at is not None:
                self.wfile.write(action.body[: action.cut_at])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(action.body)
