"""Local receivers for the outbound probes (issue 54): a threaded ``http.server`` on
127.0.0.1 (a free port) that keeps every request and answers as told:

- ``ok``: 204 at once;
- ``status:N``: N at once (e.g. ``status:500``);
- ``redirect:URL``: 302 with ``Location: URL``;
- ``hang``: reads the request and never answers (until the receiver is closed);
- ``drip``: answers 200 with a 1,000-byte body, one byte every ``drip_s`` seconds.

Used by the tests and by ``bench/outbound.py``. Posts to it need ``127.0.0.1`` allowed
(``WORKBENCH_OUTBOUND_ALLOW``): the workbench refuses loopback addresses otherwise.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)


class Receiver:
    """See the module doc. ``url`` is its base address; ``requests`` what arrived."""

    def __init__(self, mode: str = "ok", *, drip_s: float = 1.0):
        self.mode, self.drip_s = mode, drip_s
        self.requests: list[Request] = []
        self.closing = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                receiver.requests.append(Request(self.command, self.path,
                                                 {k.lower(): v for k, v in self.headers.items()},
                                                 body))
                receiver.answer(self)

            do_POST = do_GET = _any  # noqa: N815 (http.server's names)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        mode = self.mode
        try:
            if mode == "hang":
                self.closing.wait()
                return
            if mode == "drip":
                handler.send_response(200)
                handler.send_header("Content-Length", "1000")
                handler.end_headers()
                for _ in range(1000):
                    if self.closing.wait(self.drip_s):
                        return
                    handler.wfile.write(b"x")
                    handler.wfile.flush()
                return
            if mode.startswith("redirect:"):
                handler.send_response(302)
                handler.send_header("Location", mode.partition(":")[2])
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return
            status = int(mode.partition(":")[2]) if mode.startswith("status:") else 204
            handler.send_response(status)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        except OSError:  # the client gave up (its deadline): nothing to answer
            return

    @property
    def posts(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
