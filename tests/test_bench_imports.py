"""Every name a benchmark imports from this repository still exists.

Benchmarks run by hand, seldom, so a helper renamed in ``workbench/`` or ``tests/`` breaks
them silently (``bench/graph_legibility.py`` imported ``wait_idle`` for a stop after it was
gone). This reads each ``bench/*.py`` without running it: every ``from <local module> import
name`` must name a top-level definition, assignment or import of that module's file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ("workbench", "tests", "bench", "components", "store", "pages")


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names.add(leaf.id)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            star = module_file(node.module or "")  # a re-export of a module of this repo
            if star is not None:
                names.update(top_level_names(star))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):  # guarded definitions count too
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    names.add(inner.name)
                elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split(".")[0] for a in inner.names)
                elif isinstance(inner, ast.Assign):
                    names.update(t.id for t in inner.targets if isinstance(t, ast.Name))
    return names


def local_imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in LOCAL:
            yield node.lineno, node.module, [a.name for a in node.names]


@pytest.mark.parametrize("bench", sorted((ROOT / "bench").glob("*.py")), ids=lambda p: p.name)
def test_bench_imports_name_what_exists(bench: Path):
    wrong = []
    for line, module, names in local_imports(bench):
        target = module_file(module)
        if target is None:
            wrong.append(f"line {line}: no module {module}")
            continue
        defined = top_level_names(target)
        for name in names:
            if name != "*" and name not in defined and module_file(f"{module}.{name}") is None:
                wrong.append(f"line {line}: {module} has no {name}")
    assert not wrong, f"{bench.name}: " + "; ".join(wrong)
