"""The house plan of ``docs/architecture.md``, checked on the source: no module import
cycles, and each layer imports only the layers below it.

Every ``import`` statement counts, also one inside a function: a lazy import hides a cycle from
the interpreter at start-up but not from a reader, and the next eager import brings it back.
The source is read with ``ast``; nothing is imported, so a broken module fails here by name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("workbench", "store", "components", "pages")


@dataclass(frozen=True)
class ImportRef:
    importer: str  # dotted module name of the importing file
    target: str  # dotted name as written (resolved if relative)
    names: tuple[str, ...]  # for ``from target import names``
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


def imports_of(name: str, path: Path) -> list[ImportRef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    refs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            refs += [ImportRef(name, alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = name.split(".")
                # A package's own name is its base for level 1; a module's is its parent.
                keep = len(base) - node.level + (1 if is_package else 0)
                target = ".".join(base[:keep] + ([target] if target else []))
            refs.append(ImportRef(name, target, tuple(a.name for a in node.names), node.lineno))
    return refs


def internal_targets(ref: ImportRef, modules: dict[str, Path]) -> set[str]:
    """The project modules one import statement loads (``from pkg import sub`` loads ``sub``)."""
    out = set()
    for name in ref.names:
        if f"{ref.target}.{name}" in modules:
            out.add(f"{ref.target}.{name}")
        elif ref.target in modules:
            out.add(ref.target)
    if not ref.names and ref.target in modules:
        out.add(ref.target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = source_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for ref in imports_of(name, path):
            graph[name] |= internal_targets(ref, modules) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle per strongly connected component of more than one module."""
    digraph = nx.DiGraph()
    digraph.add_nodes_from(graph)
    digraph.add_edges_from((module, target) for module, targets in graph.items() for target in targets)
    components = [c for c in nx.strongly_connected_components(digraph) if len(c) > 1]
    return [_one_cycle(graph, component) for component in sorted(components, key=min)]


def _one_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back to ``start`` inside the component
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    nxt.append(child)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def test_cycle_finder_names_a_lazy_import_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_relative_imports_are_seen(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    init = pkg / "__init__.py"
    init.write_text("from . import sub\n")
    mod = pkg / "mod.py"
    mod.write_text("def f():\n    from .sub import thing\n    import os.path\n")
    assert [(r.target, r.names) for r in imports_of("pkg", init)] == [("pkg", ("sub",))]
    refs = imports_of("pkg.mod", mod)
    assert {(r.target, r.names) for r in refs} == {("pkg.sub", ("thing",)), ("os.path", ())}


# Cycles known when this test was written and not yet broken (issue #17 item 6 named two, now
# broken; this test found two more, one broken): ``cases.load_cases`` imports ``parquet`` lazily.
# The list may only shrink: a new cycle fails, and so does a listed one that is gone.
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_no_import_cycles():
    found = cycles(import_graph())
    new = [cycle for cycle in found if frozenset(cycle) not in KNOWN_CYCLES]
    assert not new, "import cycles (break them along a seam, see docs/architecture.md):\n" + "\n".join(
        " -> ".join(cycle) for cycle in new
    )
    gone = KNOWN_CYCLES - {frozenset(cycle) for cycle in found}
    assert not gone, f"cycles no longer there: remove them from KNOWN_CYCLES: {sorted(map(sorted, gone))}"


# (layer prefix, forbidden top-level imports, allowed exception prefix)
# Components draw what they are given (issues #17 item 6, #33 item 8): the store is read and
# written by the pages and their page-private ``pages/_*`` modules (the process-wide engine and
# gateway in ``pages/_state.py``, the cached policy objects in ``pages/_policy_cache.py``), so no
# component imports it, with no exceptions left.
LAYER_RULES = (
    ("workbench", ("streamlit", "sqlmodel", "store", "components", "pages"), "workbench.commands"),
    ("store", ("streamlit", "components", "pages"), None),
    ("components", ("pages", "store"), None),
)

def layer_violations(root: Path = ROOT) -> list[str]:
    """Imports that point up a layer, or sideways from components into the store."""
    problems = []
    for name, path in source_modules(root).items():
        for layer, forbidden, exempt in LAYER_RULES:
            if name.split(".")[0] != layer:
                continue
            for ref in imports_of(name, path):
                top = ref.target.split(".")[0]
                if top not in forbidden:
                    continue
                if exempt and (name == exempt or name.startswith(exempt + ".")) and top == "store":
                    continue
                problems.append(f"{path.relative_to(root)}:{ref.line} imports {ref.target}")
    return problems


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Source files ``{relative path: text}`` under ``root``, for the checkers' own tests."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_layer_checker_names_each_upward_import(tmp_path):
    files = {
        "workbench/core.py": "def f():\n    import streamlit\n",
        "workbench/commands/load.py": "from store import repo\n",  # allowed: commands use store
        "workbench/loader.py": "from store.repo import load\n",
        "store/repo.py": "from components.view import draw\n",
        "components/view.py": "from pages import home\nimport store\n",
    }
    write_tree(tmp_path, files)
    assert sorted(layer_violations(tmp_path)) == [
        "components/view.py:1 imports pages",
        "components/view.py:2 imports store",
        "store/repo.py:1 imports components.view",
        "workbench/core.py:2 imports streamlit",
        "workbench/loader.py:1 imports store.repo",
    ]


def test_layers_import_only_downwards():
    problems = layer_violations()
    assert not problems, "layer rule broken (pages -> components -> store -> workbench):\n" + (
        "\n".join(problems)
    )


def reachable(graph: dict[str, set[str]], starts: set[str]) -> set[str]:
    """Every module that importing ``starts`` loads, directly or through others."""
    seen, todo = set(starts), list(starts)
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_reachable_follows_imports_through_other_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a"}}
    assert reachable(graph, {"a"}) == {"a", "b", "c"}


def test_the_online_audit_does_not_load_the_studies():
    """``workbench.audit`` is the online path; the studies (``workbench.evaluate``) use it,
    never the reverse (issue #33 item 1), so auditing a case does not load them."""
    graph = import_graph()
    audit = {m for m in graph if m == "workbench.audit" or m.startswith("workbench.audit.")}
    studies = sorted(m for m in reachable(graph, audit) if m.split(".")[:2] == ["workbench", "evaluate"])
    assert not studies, f"the online audit path loads the studies: {studies}"


# ``workbench.graph`` is the data every stage works on (issue #33 item 5): it imports no stage
# above it, with no exception (edit impact, which re-audits stored cases after an edit, lives
# beside the audit it runs: ``workbench.audit.impact``, issue 49). Inside the package, modules
# import each other by module: the ``__init__`` re-exports the graph's types for callers outside.
GRAPH_PACKAGE = "workbench.graph"
ABOVE_THE_GRAPH = ("workbench.audit", "workbench.extract", "workbench.evaluate", "workbench.commands",
                   "workbench.api", "workbench.train", "workbench.scaling", "workbench.annotation")


def graph_package_problems(root: Path = ROOT) -> list[str]:
    problems = []
    for name, path in source_modules(root).items():
        if name != GRAPH_PACKAGE and not name.startswith(GRAPH_PACKAGE + "."):
            continue
        for ref in imports_of(name, path):
            above = ref.target.startswith(tuple(p + "." for p in ABOVE_THE_GRAPH)) or (
                ref.target in ABOVE_THE_GRAPH)
            if above:
                problems.append(f"{path.relative_to(root)}:{ref.line} imports {ref.target}")
            if name != GRAPH_PACKAGE and ref.target == GRAPH_PACKAGE:
                problems.append(f"{path.relative_to(root)}:{ref.line} imports the package front")
    return problems


def test_graph_package_checker_names_each_problem(tmp_path):
    files = {
        "workbench/graph/closure.py": "from workbench.graph import PolicyIndex\n",
        "workbench/graph/render.py": "def f():\n    from workbench.audit.trace import AuditTrace\n",
        "workbench/graph/impact.py": "from workbench.audit import audit_case\n",  # no exception
    }
    write_tree(tmp_path, files)
    assert sorted(graph_package_problems(tmp_path)) == [
        "workbench/graph/closure.py:1 imports the package front",
        "workbench/graph/impact.py:1 imports workbench.audit",
        "workbench/graph/render.py:2 imports workbench.audit.trace",
    ]


def test_the_graph_package_sits_below_the_stages_that_use_it():
    problems = graph_package_problems()
    assert not problems, "workbench.graph imports (see the package's docstring):\n" + "\n".join(problems)
