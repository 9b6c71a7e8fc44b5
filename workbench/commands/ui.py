"""``workbench ui``: start the Streamlit workbench."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from workbench.commands._common import action
from workbench.settings import DB

APP = Path(__file__).resolve().parents[2] / "app.py"


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
    return subprocess.call(cmd, env=env, cwd=APP.parent)
