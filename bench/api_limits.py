"""The audit API against hostile clients (issue 45 item 5): memory taken by an
unauthenticated 100 MB body, and how many stalled connections are still open after the
timeouts.

The API (``workbench.api.app.create_app`` with a memory store, the demo index and a judge
that is never reached) runs under ``workbench.api.server.server_config`` in a **separate
process**, so its RSS is the server's alone; the clients are raw loopback sockets here.

1. ``body``: one POST without a token declaring 100 MB, streamed 1 MB at a time until the
   server stops taking it. Prints the server's RSS before, at its peak (sampled every
   20 ms) and after, and how much the client got to send.
2. ``stalled``: N connections with the token, each declaring ``--declared`` bytes (under
   the cap, so the body-read deadline is what drops them) and sending 10; after
   ``body_timeout_s`` + 2 s, how many are still open and when the last was dropped.
3. ``stalled-100mb``: N connections without a token declaring 100 MB (the issue's case):
   answered 401 at once, nothing read.
4. ``headers``: N connections sending half a request line and header, then nothing: closed
   by ``header_timeout_s``.

Run: ``python bench/api_limits.py [--connections 300] [--body-timeout 10] [--header-timeout 10]``.
``--code DIR`` serves the ``workbench`` package found in DIR instead (e.g. an export of an
older commit, for before/after figures: ``git archive <commit> workbench | tar -x -C DIR``);
the checks that need the new settings are then run with what that code has.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
TOKEN = "bench-token-for-the-api-limits-0123456789"


def serve(port: int) -> None:
    """The server process: the API on 127.0.0.1:port, settings from WORKBENCH_API_*."""
    import uvicorn

    import workbench
    from workbench.api.app import create_app
    from workbench.api.service import AuditService, MemoryTraceStore
    from workbench.api.settings import check_settings, load_api_settings
    from workbench.audit.policy import AuditIndex
    from workbench.graph import PolicyIndex
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import role_env

    none = Path(tempfile.mkdtemp(prefix="bench-api-limits-")) / "none.toml"
    none.write_text("")  # the built-in defaults, whatever ./workbench.toml says
    settings = load_api_settings(none).with_changes(port=port)
    check_settings(settings)
    gateway = Gateway(load_config(none, env=role_env("http://127.0.0.1:9/v1", role="judge", retries=0)))
    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures" / "demo" / "index.json"))
    app = create_app(AuditService(index, gateway, MemoryTraceStore()), settings)
    try:
        from workbench.api.server import server_config
        config = server_config(app, settings, lifespan="off")
    except ImportError:  # older code: plain uvicorn
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"serving {Path(workbench.__file__).parent}", file=sys.stderr, flush=True)
    threading.Thread(target=lambda: (time.sleep(0.5), print("ready", flush=True)), daemon=True).start()
    server.run()


class Server:
    def __init__(self, code: Path, body_timeout: float, header_timeout: float):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "WORKBENCH_API_TOKEN": TOKEN, "PYTHONPATH": str(code),
               "WORKBENCH_API_BODY_TIMEOUT_S": str(body_timeout),
               "WORKBENCH_API_HEADER_TIMEOUT_S": str(header_timeout)}
        env.pop("WORKBENCH_CONFIG", None)
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve",
                                      str(self.port)], env=env, cwd=code, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "ready", "the API did not start"
        import psutil
        self.ps = psutil.Process(self.proc.pid)

    def rss_mb(self) -> float:
        return self.ps.memory_info().rss / MB

    def close(self) -> None:
        self.proc.terminate()  # only the server this bench started
        self.proc.wait(10)


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def head(*extra: str) -> bytes:
    lines = ["POST /v1/audit HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(data: bytes) -> int | None:
    m = re.match(rb"HTTP/1.1 (\d+)", data)
    return int(m.group(1)) if m else None


def big_body(server: Server) -> None:
    before = server.rss_mb()
    peak, sampling = [before], True

    def sample():
        while sampling:
            peak.append(server.rss_mb())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    chunk, sent, answer = b"x" * MB, 0, b""
    started = time.monotonic()
    with connect(server.port) as sock:
        sock.sendall(head(f"Content-Length: {100 * MB}"))
        try:
            while sent < 100 * MB:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        try:
            sock.settimeout(30)
            while chunk := sock.recv(65536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    took = time.monotonic() - started
    time.sleep(0.5)
    sampling = False
    sampler.join()
    after = server.rss_mb()
    print(f"body: unauthenticated 100 MB POST -> {status_of(answer)} after {took:.2f} s; client sent "
          f"{sent / MB:.0f} MB before the server stopped it")
    print(f"      server RSS {before:.0f} MB before, peak {max(peak):.0f} MB (+{max(peak) - before:.0f}), "
          f"{after:.0f} MB after (+{after - before:.0f})")


def watch(socks: list[socket.socket], limit_s: float) -> tuple[dict[int, float], dict[int, int]]:
    """When each socket was closed by the server (seconds from now) and the statuses seen."""
    start, open_, closed, statuses = time.monotonic(), {s.fileno(): s for s in socks}, {}, {}
    got = {fd: b"" for fd in open_}
    while open_ and time.monotonic() - start < limit_s:
        ready, _, _ = select.select(list(open_.values()), [], [], 0.2)
        for s in ready:
            fd = s.fileno()
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                data = b""
            if data:
                got[fd] += data
                continue
            closed[fd] = time.monotonic() - start
            code = status_of(got[fd])
            statuses[code] = statuses.get(code, 0) + 1
            del open_[fd]
    return closed, statuses


def stalled(server: Server, n: int, first: bytes, limit_s: float, what: str) -> None:
    socks = []
    try:
        for _ in range(n):
            s = connect(server.port)
            s.sendall(first)
            socks.append(s)
        rss = server.rss_mb()
        closed, statuses = watch(socks, limit_s)
    finally:
        for s in socks:
            s.close()
    still = n - len(closed)
    last = max(closed.values()) if closed else float("nan")
    print(f"{what}: {n} connections; after {limit_s:.0f} s {still} still open; dropped {len(closed)} "
          f"(last at {last:.2f} s), answers {json.dumps({str(k): v for k, v in statuses.items()})}; "
          f"server RSS {rss:.0f} MB while held")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--body-timeout", type=float, default=10.0)
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument("--declared", type=int, default=MB, help="bytes each stalled upload declares")
    parser.add_argument("--code", type=Path, default=ROOT, help="where the workbench package is")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        sys.path.insert(0, os.getcwd())
        serve(args.serve)
        return
    server = Server(args.code.resolve(), args.body_timeout, args.header_timeout)
    try:
        print(f"server pid {server.proc.pid}, code {args.code}; body_timeout_s {args.body_timeout:g}, "
              f"header_timeout_s {args.header_timeout:g}")
        big_body(server)
        wait = args.body_timeout + 2
        stalled(server, args.connections, head(f"Authorization: Bearer {TOKEN}",
                                               f"Content-Length: {args.declared}") + b'{"reply": ',
                wait, f"stalled ({args.declared:,} B declared, token)")
        stalled(server, args.connections, head(f"Content-Length: {100 * MB}") + b'{"reply": ',
                wait, "stalled (100 MB declared, no token)")
        stalled(server, args.connections, b"POST /v1/audit HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",
                args.header_timeout + 2, "half headers")
        print(f"server RSS at the end {server.rss_mb():.0f} MB")
    finally:
        server.close()


if __name__ == "__main__":
    main()
