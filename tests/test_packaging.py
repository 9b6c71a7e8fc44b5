"""The lock file and pyproject agree, so `make install` on a fresh machine can resolve."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def test_every_direct_dependency_is_locked_within_its_range():
    lock = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==", 1)
            lock[_norm(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["dev"]
    problems = []
    for dep in deps:
        req = Requirement(dep)
        version = lock.get(_norm(req.name))
        if version is None:
            problems.append(f"{dep}: missing from requirements.lock")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{dep}: lock has {version}")
    assert not problems, "re-pin pyproject or regenerate the lock:\n" + "\n".join(problems)


def test_litellm_is_never_a_known_malicious_release():
    lock = (ROOT / "requirements.lock").read_text()
    for bad in ("litellm==1.82.7", "litellm==1.82.8"):
        assert bad not in lock
