"""Every ``WORKBENCH_*`` variable the workbench reads is documented, so the docs cannot drift
(as datasette tests its settings docs): a name found in the source or in the registry of
``workbench.settings`` must appear in the settings reference the documentation site generates
from that registry (``docs/_hooks/reference.py``), in a docs page, README.md or
workbench.toml.example."""

from __future__ import annotations

import re
from pathlib import Path

from workbench import settings

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("workbench", "store", "pages", "components", "app.py")
DOCS = ("README.md", "workbench.toml.example")
# A name, a family pattern (WORKBENCH_<ROLE>_MODEL) or a prefix a loader completes
# (f"WORKBENCH_API_{key.upper()}" leaves "WORKBENCH_API_").
NAME = re.compile(r"WORKBENCH_[A-Z0-9_<>]*")
PLACEHOLDER = re.compile(r"<[A-Z]+>")


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def _names_in_source() -> dict[str, str]:
    """Each name (a prefix ends in ``_``) -> the first place it occurs, as ``path:line``."""
    found: dict[str, str] = {}
    for path in _source_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in NAME.finditer(line):
                name = match.group()
                if name.rstrip("_") == "WORKBENCH":  # "WORKBENCH_*" or f"WORKBENCH_{role}_...": a family
                    continue
                found.setdefault(name, f"{path.relative_to(ROOT)}:{number}")
    return found


def _settings_reference() -> str:
    """The generated settings page, as the documentation site shows it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "_hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.settings_markdown()


def _docs() -> str:
    present = [ROOT / name for name in DOCS if (ROOT / name).is_file()]
    present += sorted((ROOT / "docs").rglob("*.md"))
    assert present, f"none of {DOCS} exists: the variables have nowhere to be documented"
    return "\n".join([_settings_reference(), *(path.read_text(encoding="utf-8") for path in present)])


def _family_regex(pattern: str) -> re.Pattern[str]:
    parts = PLACEHOLDER.split(pattern)
    return re.compile("[A-Z0-9_<>]+".join(re.escape(p) for p in parts) + "$")


def _documented(name: str, docs: str, families: list[re.Pattern[str]]) -> bool:
    if name.endswith("_"):  # a prefix: documented when any member or the family is
        return name in docs
    if re.search(re.escape(name) + r"(?![A-Z0-9_<>])", docs):
        return True
    # A pattern such as WORKBENCH_<ROLE>_API_BASE is an instance of a documented family; a
    # family itself and a concrete name (WORKBENCH_JUDGE_MODEL) must be written out, or any
    # name would pass.
    if name in (f.pattern for f in settings.FAMILIES) or not PLACEHOLDER.search(name):
        return False
    return any(f.match(name) for f in families)


def test_every_variable_read_is_documented() -> None:
    docs = _docs()
    families = [_family_regex(f.pattern) for f in settings.FAMILIES
                if _documented(f.pattern, docs, [])]
    found = _names_in_source()
    found.update({v.name: "workbench/settings.py (VARIABLES)" for v in settings.VARIABLES
                  if v.name not in found})
    found.update({f.pattern: "workbench/settings.py (FAMILIES)" for f in settings.FAMILIES
                  if f.pattern not in found})
    missing = [f"{name} (read at {where})" for name, where in sorted(found.items())
               if not _documented(name, docs, families)]
    assert not missing, (
        "undocumented WORKBENCH_* variables: " + "; ".join(missing)
        + ". Name it in workbench/settings.py (VARIABLES, or a family), which the settings "
        "reference of the docs is generated from (or explain the setting in workbench.toml.example)")


def test_the_registry_names_each_variable_once_with_a_doc() -> None:
    from workbench.llm.config import ROLE_NAMES

    names = [v.name for v in settings.VARIABLES]
    assert len(names) == len(set(names))
    for variable in settings.VARIABLES:
        assert variable.name.startswith(settings.PREFIX) and "default" in variable.doc, variable
    # Every single variable the source spells out is in the registry or a family's member.
    families = (settings.DEFAULT_PREFIX, settings.EMBEDDED_PREFIX, settings.API_PREFIX,
                *(settings.role_prefix(role) for role in ROLE_NAMES))
    for name, where in _names_in_source().items():
        if name.endswith("_") or PLACEHOLDER.search(name) or name.startswith(families):
            continue
        assert name in names, f"{name} ({where}) is not in workbench.settings.VARIABLES: add it there"


def test_only_the_settings_module_reads_a_variable_by_its_literal_name() -> None:
    reads = re.compile(r"""(environ\.get|getenv|environ\[|env\.get|env\[)\(?\s*f?["']WORKBENCH_""")
    offenders = [f"{path.relative_to(ROOT)}:{number}"
                 for path in _source_files() if path != ROOT / "workbench" / "settings.py"
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if reads.search(line)]
    assert not offenders, ("read a WORKBENCH_* variable through workbench.settings, not by its "
                           "literal name: " + ", ".join(offenders))


def test_a_variable_is_read_at_call_time(monkeypatch) -> None:
    monkeypatch.delenv(settings.TRAIN_RUNS.name, raising=False)
    assert settings.TRAIN_RUNS.read(default="x") == "x"
    monkeypatch.setenv(settings.TRAIN_RUNS.name, "runs")
    assert settings.TRAIN_RUNS.read(default="x") == "runs"
    assert settings.TRAIN_RUNS.read({}, "given env") == "given env"
    assert settings.overriding_names("my-judge", "model") == (
        "WORKBENCH_MY_JUDGE_MODEL", "WORKBENCH_DEFAULT_MODEL")
    assert settings.api_key_variable("judge") == "WORKBENCH_JUDGE_API_KEY"
