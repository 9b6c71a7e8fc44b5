"""How the command modules of ``workbench/commands/`` stand to each other and to the lab
(issue 49): a command module imports no other command module (what two share lives in a
``_``-prefixed module such as ``_common``), and building the parser (``workbench --help``)
loads neither the research lab's packages nor their heavy libraries.

The source is read with ``ast``, as in ``test_layers``; what the parser loads is read in a
subprocess, so that what other tests imported does not count. The lab's commands register
only where the lab extra is installed (``workbench.extras``), else as placeholders that say
how to install it."""

from __future__ import annotations

import ast
import importlib.util
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
    shown in the help comes from a light module (``workbench.extras.lab_defaults``); a heavy import
    belongs inside the command function."""
    done = subprocess.run([sys.executable, "-c", LOADED], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True)
    assert json.loads(done.stdout) == []


# --- the research lab's commands (issue 49) ------------------------------------------------

FIND_SPEC = importlib.util.find_spec  # the real one, whatever a test patches


def imports_lab(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n == p or n.startswith(p + ".") for n in names for p in LAB):
            return True
    return False


def test_every_command_that_runs_the_lab_is_a_lab_command():
    """A command module that imports a lab package is in ``LAB_COMMANDS`` (so it registers
    only where the lab is installed), and every entry there is a command module."""
    from workbench.commands._common import LAB_COMMANDS

    lab = {name for name in public_commands() if imports_lab(COMMANDS / f"{name}.py")}
    assert lab == set(LAB_COMMANDS)


def missing_here(monkeypatch, *names: str) -> None:
    """Make the spec check (``workbench.extras``, ``find_spec``) say that ``names`` cannot be
    imported, and the rest as they are (a second call replaces the first's names)."""
    from workbench import extras

    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *a: None if name in names else FIND_SPEC(name, *a))


def commands_of(parser) -> dict:
    import argparse

    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_lab_commands_register_as_usual_where_the_lab_is_installed():
    from workbench import extras
    from workbench.cli import build_parser
    from workbench.commands._common import LAB_COMMANDS, LAB_EXTRA

    assert extras.installed(LAB_EXTRA)  # the test environment has every extra
    found = commands_of(build_parser())
    for command in LAB_COMMANDS.values():
        assert "research lab" not in (found[command].description or ""), command
    assert "opd" in commands_of(found["train"]) and "fit" in commands_of(found["scaling"])


def test_a_lab_command_without_the_lab_says_how_to_install_it(monkeypatch, capsys):
    import pytest

    from workbench.cli import build_parser, main
    from workbench.commands._common import LAB_COMMANDS

    missing_here(monkeypatch, "torch", "lightrag")
    parser = build_parser()
    found = commands_of(parser)
    listed = " ".join(parser.format_help().split())
    for command in LAB_COMMANDS.values():
        assert found[command]._subparsers is None, command  # no `train opd` ... here
        assert f"{command} part of the research lab: install it with pip install '.[lab]'" in listed
    assert "opd" not in listed and "audit" in found and "capture" in commands_of(found["features"])
    # Run with any arguments (those of the real command too): exit 2, the install said.
    for argv in (["train"], ["train", "opd", "--records", "r.jsonl", "--student", "embedded"],
                 ["baselines", "index", "--index", "i.json"], ["scaling-outcomes", "--out", "o.csv"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"error: workbench {argv[0]} is part of the research lab: install it with pip install "
            "'.[lab]' (missing here: torch, lightrag)\n")
    # Its help says the same, and exits 0 as any help does.
    with pytest.raises(SystemExit) as done:
        main(["train", "--help"])
    assert done.value.code == 0
    assert "install it with pip install '.[lab]' (missing here: torch, lightrag)" in " ".join(
        capsys.readouterr().out.split())
    # A product command keeps refusing what it does not know.
    with pytest.raises(SystemExit) as done:
        main(["graph", "stats", "i.json", "--no-such-flag"])
    assert done.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_features_capture_names_the_activations_extra_before_reading_anything(monkeypatch, capsys,
                                                                              tmp_path):
    """`workbench features capture` stays a product command. It reads with llama.cpp by
    default and needs no extra (issue 57); ``--reader transformers`` without torch,
    transformers or gguf names the extra to install before it reads the traces or loads a
    model (it failed after "loading ...", and without gguf as a model that could not load)."""
    from workbench.cli import main

    plain = ["features", "capture", str(tmp_path / "none.jsonl"), "--cases", str(tmp_path / "c.jsonl")]
    missing_here(monkeypatch, "torch", "transformers", "gguf")
    assert main(plain) == 2  # no extra needed: it goes on to find the traces file missing
    err = capsys.readouterr().err
    assert "no such traces file" in err and ".[activations]" not in err
    argv = [*plain, "--reader", "transformers"]
    missing_here(monkeypatch, "gguf")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "(missing: gguf); install it with pip install '.[activations]'" in err
    assert "loading" not in err
    missing_here(monkeypatch, "torch", "transformers")
    assert main(argv) == 2
    assert "(missing: torch, transformers); install it with pip install '.[activations]'" in (
        capsys.readouterr().err)


def test_the_lab_defaults_the_help_shows_are_the_labs():
    """``train opd --recipe`` offers the recipes of ``workbench.train.recipes`` (a light
    module) without loading it; ``train joint``'s defaults are ``JointSettings``' own, which
    reads them from ``workbench.extras.lab_defaults``."""
    from workbench.extras.lab_defaults import DEFAULT_OPD_RECIPE, OPD_RECIPES
    from workbench.train.recipes import DEFAULT_RECIPE, RECIPES

    assert tuple(RECIPES) == OPD_RECIPES and DEFAULT_RECIPE == DEFAULT_OPD_RECIPE
