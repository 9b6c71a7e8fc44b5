"""How the command modules of ``workbench/commands/`` stand to each other and to the lab
(issue 49): a command module imports no other command module (what two share lives in a
``_``-prefixed module such as ``_common``), and building the parser (``workbench --help``)
loads neither the research lab's packages nor their heavy libraries.

The source is read with ``ast``, as in ``test_layers``; what the parser loads is read in a
subprocess, so that what other tests imported does not count."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ROOT / "workbench" / "commands"
PACKAGE = "workbench.commands"


def public_commands(folder: Path = COMMANDS) -> set[str]:
    """The command modules' names: every module but ``__init__`` and the ``_`` shared ones."""
    return {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}


def imported_commands(path: Path, commands: set[str]) -> set[str]:
    """The public command modules that ``path`` imports, at the top or inside a function:
    ``import workbench.commands.X``, ``from workbench.commands.X import ...``, ``from
    workbench.commands import X`` and the relative forms of both."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative to workbench.commands (level 1) or above it
                base = PACKAGE.split(".")[: len(PACKAGE.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            names = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["workbench", "commands"] and len(parts) > 2 and parts[2] in commands:
                found.add(parts[2])
    return found


def cross_imports(folder: Path = COMMANDS) -> list[str]:
    commands = public_commands(folder)
    problems = []
    for name in sorted(commands):
        for other in sorted(imported_commands(folder / f"{name}.py", commands) - {name}):
            problems.append(f"commands/{name}.py imports commands/{other}.py")
    return problems


def test_checker_names_each_import_of_another_command(tmp_path):
    files = {
        "audit.py": "from workbench.commands._common import CliError\n",  # shared: allowed
        "graph.py": "def f():\n    from workbench.commands.audit import load\n",
        "train.py": "import workbench.commands.graph\nfrom workbench.commands import audit, _common\n",
        "api.py": "from . import graph\nfrom .audit import x\nfrom ._common import y\n",
        "_common.py": "from workbench.commands.audit import z\n",  # not a command: not checked
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert cross_imports(tmp_path) == [
        "commands/api.py imports commands/audit.py",
        "commands/api.py imports commands/graph.py",
        "commands/graph.py imports commands/audit.py",
        "commands/train.py imports commands/audit.py",
        "commands/train.py imports commands/graph.py",
    ]


def test_command_modules_never_import_each_other():
    problems = cross_imports()
    assert not problems, ("a command module imports another; move what they share into "
                          "workbench/commands/_common.py (or another _ module):\n" + "\n".join(problems))


def test_no_command_module_passes_500_lines():
    """The shared modules grow with every helper moved into them, and a command with its
    actions: split one (into another ``_`` module) before it passes 500 lines."""
    long = {p.name: n for p in sorted(COMMANDS.glob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, f"split these command modules: {long}"


HEAVY = ("torch", "transformers", "peft", "datasets", "lightrag", "accelerate")
LAB = ("workbench.train", "workbench.scaling", "workbench.evaluate", "workbench.audit.baselines")
LOADED = (
    "import json, sys\n"
    "from workbench.cli import build_parser\n"
    "build_parser()\n"
    f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r} "
    f"or m.startswith({LAB!r}))))\n"
)


def test_building_the_parser_loads_no_lab_and_no_heavy_library():
    """``workbench --help`` (and ``workbench audit --help``, ...) only build the parser: no
    torch, transformers, peft, datasets, lightrag or accelerate, no lab package. A default
    shown in the help comes from a light module (``workbench.lab_defaults``); a heavy import
    belongs inside the command function."""
    done = subprocess.run([sys.executable, "-c", LOADED], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True)
    assert json.loads(done.stdout) == []


def test_the_lab_defaults_the_help_shows_are_the_labs():
    """``train opd --recipe`` offers the recipes of ``workbench.train.recipes`` (a light
    module) without loading it; ``train joint``'s defaults are ``JointSettings``' own, which
    reads them from ``workbench.lab_defaults``."""
    from workbench.lab_defaults import DEFAULT_OPD_RECIPE, OPD_RECIPES
    from workbench.train.recipes import DEFAULT_RECIPE, RECIPES

    assert tuple(RECIPES) == OPD_RECIPES and DEFAULT_RECIPE == DEFAULT_OPD_RECIPE
