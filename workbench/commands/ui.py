"""``workbench ui``: start the Streamlit workbench.

The server runs as a child process (``components.launcher``, see there). Stopping the
command stops the server: SIGTERM, SIGINT and SIGHUP sent to ``workbench ui`` are passed on
to it and the command waits for it to exit (killing it after :data:`STOP_GRACE_S`), and on
Linux the child is also told to stop when its parent dies without a word (SIGKILL, a crash):
``kill`` of ``make demo`` or of ``workbench ui`` left the server answering on the port
(issue 56 item 4).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from workbench.commands._common import action
from workbench.settings import DB

APP = Path(__file__).resolve().parents[2] / "app.py"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_GRACE_S = 10.0  # Streamlit closes its sessions and port in well under a second


def register(sub: argparse._SubParsersAction) -> None:
    p = action(sub, "ui", _ui, help="start the workbench web UI")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--db", help="SQLAlchemy URL (sets WORKBENCH_DB for the app)")


def _ui(args) -> int:
    from workbench.commands._common import CliError

    # components.launcher (not plain `streamlit run`) keeps st.navigation in charge; see there.
    if not APP.is_file():
        raise CliError(f"{APP} not found: run `workbench ui` from a source checkout (pip install -e .)")
    env = dict(os.environ)
    if args.db:
        env[DB.name] = args.db
    # Headless, usage statistics and the theme live in .streamlit/config.toml (read from
    # cwd=APP.parent), so a plain `streamlit run app.py` behaves the same. Only the per-run
    # choices config cannot know stay here: the port and address the user asked for.
    cmd = [
        sys.executable, "-m", "components.launcher", str(APP),
        "--server.port", str(args.port),
        "--server.address", args.host,
    ]
    return run_forwarding(cmd, env=env, cwd=APP.parent)


def run_forwarding(cmd: list[str], *, env: dict[str, str] | None = None,
                   cwd: Path | None = None) -> int:
    """Run ``cmd`` as a child and return its exit code; the signals of :data:`FORWARDED`
    that reach this process go to the child, which gets :data:`STOP_GRACE_S` to exit before
    it is killed. (``subprocess.call`` left the child running when the parent was killed.)"""
    child = subprocess.Popen(cmd, env=env, cwd=cwd, preexec_fn=_die_with_parent())
    forwarded: list[float] = []  # when the first forwarded signal was sent
    previous = {sig: signal.signal(sig, _forward_to(child, forwarded)) for sig in FORWARDED}
    try:
        while True:
            try:
                return child.wait(0.5)
            except subprocess.TimeoutExpired:
                # A child asked to stop gets STOP_GRACE_S from that moment, not forever: a
                # server slow to act on the signal (SIGHUP on a loaded machine) is killed.
                if forwarded and time.monotonic() - forwarded[0] > STOP_GRACE_S:
                    child.kill()
                    return child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop(child)


def _forward_to(child: subprocess.Popen, forwarded: list[float]) -> Callable[[int, object], None]:
    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)
            forwarded[:] = forwarded or [time.monotonic()]
    return forward


def _stop(child: subprocess.Popen) -> None:
    """Make sure the child is gone when this command returns (by any path)."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a function for the child to run before it starts: the kernel sends it
    SIGTERM when this process dies, even by SIGKILL, which no handler sees. ``None``
    elsewhere (the handlers above still cover the signals a process can catch)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def arm() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the call: stop now
            os.kill(os.getpid(), signal.SIGTERM)
    return arm
