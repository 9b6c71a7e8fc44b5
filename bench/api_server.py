"""The audit API as ``workbench api`` serves it (``commands.api.build_app``: the database
store, ``[api]`` settings from ``WORKBENCH_API_*``, ``server_config``), in a process of its
own, for ``bench/api.py`` and the kill -9 test (``tests/test_api_write_ahead.py``).

Unlike ``workbench api`` it accepts ``--judge-mode none`` (the ``--no-judge`` audit the
benchmark times) and prints ``ready <port>`` once it is serving. The database is
``WORKBENCH_DB``; the policy index is the database's SKILLs or ``--index``.

    python bench/api_server.py --port 0 --judge-mode none --concurrency 4 --queue 64
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import uvicorn

    from workbench.api.server import server_config
    from workbench.commands.api import build_app

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--judge-mode", default="none")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--queue", type=int, default=64)
    args = parser.parse_args()
    port = args.port
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    ns = argparse.Namespace(index=args.index, host="127.0.0.1", port=port, dataset=None, run_id=None,
                            concurrency=args.concurrency, queue=args.queue, strategy="cdg",
                            judge_mode=args.judge_mode, no_cache=True)
    app, settings = build_app(ns)
    server = uvicorn.Server(server_config(app, settings, host="127.0.0.1", port=port))

    def announce() -> None:
        while not server.started:
            time.sleep(0.01)
        print(f"ready {port}", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    server.run()


if __name__ == "__main__":
    main()
