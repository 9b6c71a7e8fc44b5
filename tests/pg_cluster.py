"""A throw-away PostgreSQL cluster for the store tests, in a temp folder, on a free port.

``WORKBENCH_TEST_PG_URL`` (a ``postgresql+psycopg://`` URL of a server the tests may create
databases on) is used as is when set. Otherwise the server binaries of Debian's
``postgresql`` package (``/usr/lib/postgresql/<version>/bin``) start a cluster that lives
as long as the test session. initdb refuses to run as root, so as root the cluster runs as
the ``postgres`` user (``runuser``). Without binaries the PostgreSQL variants are skipped,
unless ``WORKBENCH_REQUIRE_PG=1`` (set by ``.ci/run``) makes that a failure: in CI they must run.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

URL_ENV = "WORKBENCH_TEST_PG_URL"
REQUIRE_ENV = "WORKBENCH_REQUIRE_PG"


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version)
    return Path(found[-1]).parent if found else None


def _version(path: str) -> int:
    try:
        return int(Path(path).parts[-3])
    except ValueError:
        return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """``start()`` gives an admin URL; ``fresh_database()`` a URL of a new empty database."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.url = ""
        self._bin: Path | None = None
        self._as: list[str] = []

    def start(self) -> str:
        if os.environ.get(URL_ENV):
            self.url = os.environ[URL_ENV]
            return self.url
        self._bin = server_bin()
        if self._bin is None:
            raise FileNotFoundError(
                "no PostgreSQL server binary under /usr/lib/postgresql/*/bin: install Debian's "
                f"'postgresql' package (apt-get install postgresql) or set {URL_ENV}"
            )
        self.folder = Path(tempfile.mkdtemp(prefix="wb-pg-"))
        data = self.folder / "data"
        if os.geteuid() == 0:  # initdb refuses root
            shutil.chown(self.folder, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        port = _free_port()
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        options = (f"-p {port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        return self.url

    def fresh_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        admin = self.url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        if self.folder is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _run(self, tool: str, *args: str) -> None:
        assert self._bin is not None
        done = subprocess.run([*self._as, str(self._bin / tool), *args], capture_output=True,
                              text=True, timeout=120, cwd=self.folder)
        if done.returncode != 0:
            log = self.folder / "log" if self.folder else None
            tail = log.read_text()[-2000:] if log and log.is_file() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")
