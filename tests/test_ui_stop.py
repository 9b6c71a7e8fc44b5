"""Issue 56 item 4: stopping ``workbench ui`` (or ``make demo``, which runs it last) stops the
Streamlit server it started. Each test starts the real command on a free port, waits until
the server answers, stops the parent the way a person or a process manager would, and checks
that the port no longer answers and the server process is gone (``subprocess.call`` left the
child answering 200 on the port)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = Path(sys.executable).with_name("workbench")
UP_S = 120  # a cold Streamlit start beside a model job on two shared cores
MAKE_DEMO_S = 300  # make demo's install check and imports before its server starts
DOWN_S = 20  # STOP_GRACE_S of workbench.commands.ui, and some


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), children first."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def _wait_up(proc: subprocess.Popen, port: int, log: Path, up_s: float = UP_S) -> None:
    deadline = time.monotonic() + up_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _answers(port):
            return
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"the server did not come up on port {port}; its output:\n{log.read_text()[-3000:]}")


def _wait_down(port: int, pids: list[int]) -> None:
    deadline = time.monotonic() + DOWN_S
    while time.monotonic() < deadline:
        if not _port_open(port) and not any(_alive(p) for p in pids):
            return
        time.sleep(0.2)
    left = [p for p in pids if _alive(p)]
    for p in left:  # never leave a server behind for the rest of the suite
        os.kill(p, signal.SIGKILL)
    pytest.fail(f"port {port} open: {_port_open(port)}; processes left running: {left}")


def _start_ui(tmp_path: Path, port: int) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "ui.log"
    proc = subprocess.Popen(
        [str(WORKBENCH), "ui", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'ui.db'}"],
        cwd=tmp_path, stdout=log.open("w"), stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    return proc, log


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=lambda s: s.name)
def test_stopping_workbench_ui_stops_its_server(tmp_path, sig):
    port = _free_port()
    proc, log = _start_ui(tmp_path, port)
    _wait_up(proc, port, log)
    server = _descendants(proc.pid)
    assert server, "workbench ui started no server process"
    proc.send_signal(sig)
    proc.wait(DOWN_S)
    _wait_down(port, server)


@pytest.mark.slow
def test_a_killed_workbench_ui_takes_its_server_along(tmp_path):
    """SIGKILL reaches no handler: the server is told by the kernel (Linux)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    port = _free_port()
    proc, log = _start_ui(tmp_path, port)
    _wait_up(proc, port, log)
    server = _descendants(proc.pid)
    proc.kill()
    proc.wait(DOWN_S)
    _wait_down(port, server)


@pytest.mark.slow
def test_stopping_make_demo_stops_its_server(tmp_path):
    """``make demo`` imports the demo into a database of the test's own, then runs
    ``workbench ui``; killing make (SIGTERM, as a process manager or ``kill`` does) stops
    the server."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    port = _free_port()
    log = tmp_path / "demo.log"
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "demo", f"PORT={port}"], cwd=ROOT,
        stdout=log.open("w"), stderr=subprocess.STDOUT,
        env=dict(os.environ, WORKBENCH_DB=f"sqlite:///{tmp_path / 'demo.db'}",
                 PYTHONUNBUFFERED="1"),
    )
    # make demo first checks the install and imports the demo (policies, cases, traces, the
    # replayed explanations) before the server starts: minutes on two busy cores.
    _wait_up(proc, port, log, up_s=UP_S + MAKE_DEMO_S)
    below = _descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(DOWN_S)
    _wait_down(port, below)
