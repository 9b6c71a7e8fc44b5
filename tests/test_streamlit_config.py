"""The top-level .streamlit/config.toml: server and browser settings live there (so a plain
`streamlit run app.py` is headless and sends no usage statistics), with a light and a dark
theme; launchers keep only per-run flags."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".streamlit" / "config.toml"


def test_config_sets_headless_no_usage_statistics_and_both_themes():
    cfg = tomllib.loads(CONFIG.read_text())
    assert cfg["server"]["headless"] is True
    assert cfg["browser"]["gatherUsageStats"] is False
    for variant in ("light", "dark"):
        theme = cfg["theme"][variant]
        assert {"backgroundColor", "textColor", "primaryColor"} <= theme.keys()
    # No `base`: Streamlit then follows prefers-color-scheme and offers both variants.
    assert "base" not in cfg["theme"]
    # Issue 35: no "Deploy" button (it offers to publish policies to Streamlit's cloud).
    assert cfg["client"]["toolbarMode"] == "viewer"


def test_streamlit_reads_the_config_from_the_checkout():
    # What a plain `streamlit run app.py` from the checkout sees, read by Streamlit itself.
    code = ("from streamlit import config; "
            "print(config.get_option('server.headless'), config.get_option('browser.gatherUsageStats'), "
            "config.get_option('client.toolbarMode'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "False", "viewer"]


def test_workbench_ui_passes_only_per_run_flags(monkeypatch):
    from workbench.commands import ui

    seen: dict = {}

    def fake_run(cmd, *, env=None, cwd=None):
        seen.update(cmd=cmd, cwd=cwd)
        return 0

    # The child is started by run_forwarding (signals forwarded, see test_ui_stop.py): stand
    # in for it, so no Streamlit server is started here.
    monkeypatch.setattr(ui, "run_forwarding", fake_run)
    assert ui._ui(argparse.Namespace(port=8600, host="127.0.0.1", db=None)) == 0
    flags = [a for a in seen["cmd"] if a.startswith("--")]
    assert flags == ["--server.port", "--server.address"]
    # The config is found relative to the working directory, so it must be the checkout.
    assert Path(seen["cwd"]) == ROOT
