"""How the command modules of ``workbench/commands/`` stand to each other (issue 49): a
command module imports no other command module (what two share lives in a ``_``-prefixed
module such as ``_common``). The source is read with ``ast``, as in ``test_layers``."""

from __future__ import annotations

import ast
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
