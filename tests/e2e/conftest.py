"""Real browser tests: a real ``streamlit run app.py`` server on a free port with a temporary
database, driven by Debian's Chromium through Playwright."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from workbench.identity.roles import COMMAND_LINE

from .screen import IDLE_CEILING_MS, PAGE_CEILING_MS, new_page  # noqa: F401 (re-exported)

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, db_url: str, log: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.db_url = db_url
        env = dict(os.environ, **(env or {}), WORKBENCH_DB=db_url, PYTHONUNBUFFERED="1")
        # Headless and no usage statistics come from .streamlit/config.toml (cwd=ROOT). Only
        # what is per run stays here: a free port, loopback only, and no file watcher (a test
        # server must not rerun pages while sibling worktrees' files change, and it saves CPU).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "components.launcher", str(ROOT / "app.py"),
             "--server.port", str(self.port), "--server.address", "127.0.0.1",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        )

    def wait(self, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        output = self.log.read_text() if self.log.exists() else ""
        self.stop()
        raise RuntimeError(f"streamlit server did not come up at {self.url}; its output:\n{output}")

    @contextmanager
    def store(self) -> Iterator[Any]:
        """The server's database (an engine), for a test to read or fill; disposed after."""
        from store.db import make_engine

        eng = make_engine(self.db_url)
        try:
            yield eng
        finally:
            eng.dispose()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def seed_database(db_url: str, index_data: dict) -> None:
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex

    eng = make_engine(db_url)
    repo.import_index(eng, PolicyIndex.from_dict(index_data), actor=COMMAND_LINE)
    eng.dispose()


def seed_demo_run(db_url: str) -> None:
    """The demo cases and the embedded judge's stored traces, as `make demo` loads them."""
    from store import audit_repo
    from store.db import make_engine
    from workbench.audit import load_cases, read_traces

    eng = make_engine(db_url)
    audit_repo.save_cases(eng, "demo", load_cases(ROOT / "fixtures/demo/cases.jsonl"), actor=COMMAND_LINE)
    audit_repo.save_traces(eng, read_traces(ROOT / "fixtures/demo/traces_cdg.jsonl")[0],
                           "demo-cdg", "demo", actor=COMMAND_LINE)
    eng.dispose()


# Module scope, not session: Playwright's sync API keeps an event loop running on the main
# thread while the browser is open, which would break asyncio.run() in later, non-browser tests.
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing at /usr/bin/chromium: run `make test` (installs it) or "
                    "`apt-get install -y chromium`.")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page in a fresh context, read through ``tests/e2e/screen.py`` (its hook installed);
    every wait is on what the user sees, with ceilings high enough for a machine whose two
    cores are shared with a model server and another test run."""
    pg = new_page(browser)
    pg.external_requests = []  # type: ignore[attr-defined]

    def on_request(req):
        url = req.url
        if not (url.startswith("http://127.0.0.1") or url.startswith("data:")
                or url.startswith("about:") or url.startswith("blob:")):
            pg.external_requests.append(url)  # type: ignore[attr-defined]

    pg.on("request", on_request)
    yield pg
    pg.context.close()


def make_server(tmp_path: Path, index_data: dict, *seeds: Callable[[str], None],
                env: dict[str, str] | None = None) -> Server:
    """A running server on a new database under ``tmp_path`` holding ``index_data``, then
    filled by each of ``seeds`` (called with the database URL) before it starts."""
    db = f"sqlite:///{tmp_path / 'e2e.db'}"
    seed_database(db, index_data)
    for seed in seeds:
        seed(db)
    server = Server(db, tmp_path / "server.log", env)
    server.wait()
    return server


def demo_server(folder: str, *seeds: Callable[[str], None], env: dict[str, str] | None = None):
    """A module-scoped ``server`` fixture (assign it as ``server = demo_server(...)``): a
    server on the demo index in a new database under a temporary folder named ``folder``,
    filled by ``seeds`` before it starts (with ``env``), stopped after the module."""

    @pytest.fixture(scope="module")
    def server(tmp_path_factory):
        srv = make_server(tmp_path_factory.mktemp(folder), demo_index(), *seeds, env=env)
        yield srv
        srv.stop()

    return server


def demo_index() -> dict:
    path = ROOT / "fixtures" / "demo" / "index.json"
    return json.loads(path.read_text())
