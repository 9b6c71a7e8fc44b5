"""The documentation cannot lie (issue 55 item 3), as datasette fails a test when a setting is
undocumented:

- every ``workbench`` command, action and option appears in the generated CLI reference, and
  every setting (variable, family member, file key) in the generated settings reference;
- a name written in double backticks in a docstring (``workbench``, ``store``, ``pages``,
  ``components``, ``app.py``, ``tests``, ``bench``) or in a docs page (``docs/**/*.md``,
  README.md) resolves to a module, class, function, attribute or setting of the code, or is a
  repository path that exists; :data:`EXCEPTIONS` lists the few that need not, each with why;
- every repository path a docs page names (a Markdown link, or a path in backticks under one
  of the repository's own folders) exists, and every link between pages does;
- every result file of ``docs/evaluations/`` is quoted on an Evidence page;
- README.md stays a page a newcomer reads: at most 200 lines.

The generated pages come from ``docs/_hooks/reference.py`` (the MkDocs hook), read here as the
site shows them. Names are resolved by reading the source with ``ast``: nothing is imported but
the CLI's parsers and the settings registry.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CODE_ROOTS = ("workbench", "store", "pages", "components", "tests", "bench")
CODE_FILES = ("app.py",)
# Folders and files of the repository a docs page may name as a path.
REPO_TOPS = ("workbench", "store", "pages", "components", "tests", "bench", "fixtures", "docs",
             ".ci", ".streamlit", "app.py", "Makefile", "pyproject.toml", "requirements.lock",
             "requirements-graphrag.txt", "workbench.toml.example", "mkdocs.yml", "README.md")
# Written by a person, not kept in the repository (gitignored); the site's generated pages
# (``docs/reference/cli.md``, ...) come from the hook's GENERATED.
GENERATED_PATHS = (".streamlit/secrets.toml",)

# Names in double backticks that resolve to nothing in the code, on purpose: name -> why.
EXCEPTIONS: dict[str, str] = {
    # Other packages' schemas and internals a module writes against without importing the name.
    "AnnotateSpansRequestBody": "Arize Phoenix's request schema the phoenix export follows",
    "IngestionRequest": "Langfuse's ingestion schema the langfuse export follows",
    "ReadableLogRecord": "the OpenTelemetry SDK's record type the OTLP export builds",
    "AnnotationResult": "Arize Phoenix's schema, named by the export test",
    "SpanAnnotationData": "Arize Phoenix's schema, named by the export test",
    "ScoreBody": "Langfuse's schema, named by the export test",
    "ScoreDataType": "Langfuse's schema, named by the export test",
    "ScoreEvent": "Langfuse's schema, named by the export test",
    "BackMsg": "Streamlit's browser-to-server protobuf message (tests/e2e/screen.py)",
    "rerun_script": "Streamlit's BackMsg field",
    "ru_maxrss": "resource.getrusage's field",
    "json_format.Parse": "protobuf's parser (google.protobuf.json_format), named by the OTLP test",
    "GKDTrainer": "TRL's trainer the OPD trainer is compared with",
    "GRPOTrainer": "TRL's trainer the GRPO trainer is compared with",
    "tau2.data_model.simulation.Results": "tau2-bench's results model: the importer reads its "
                                          "file format; tau2-bench is not a dependency",
    "ForwardMsg.script_finished": "Streamlit's server-to-browser protobuf message",
    "document.cookie": "the browser's JavaScript API (the session cookie component)",
    "innerText": "the browser's DOM property (the rule-graph component)",
    "setTriggerValue": "Streamlit's Components-v2 JavaScript API",
    "cb_eval": "llama.cpp's evaluation-callback parameter",
    "result_norm": "llama.cpp's name of the final norm's tensor",
    "general.type": "a GGUF metadata key",
    "lora_A": "PEFT's adapter tensor name",
    "pg_type": "PostgreSQL's catalog table",
    # Others' environment variables, read by the library that owns them.
    "OTEL_EXPORTER_OTLP_ENDPOINT": "the OpenTelemetry SDK's variable",
    "SSL_CERT_DIR": "OpenSSL's variable, honoured by httpx",
    "SSL_CERT_FILE": "OpenSSL's variable, honoured by httpx",
    "WORKBENCH_TEST_PG_URL": "the test session's PostgreSQL (tests/pg_cluster.py); not a setting "
                             "of the workbench",
    # The <SETTING> part of a family written alone.
    "SMALL_URL": "WORKBENCH_EMBEDDED_<SETTING> with SETTING = SMALL_URL",
    "CTX_SIZE": "WORKBENCH_EMBEDDED_<SETTING> with SETTING = CTX_SIZE",
    # Formulas written in their notation.
    "D_e": "Krippendorff's expected disagreement in the formula",
    "D_o": "Krippendorff's observed disagreement in the formula",
    "n_c": "a count in the agreement formulas",
    "p_c": "chance agreement in the formula",
    "p_o": "observed agreement in the formula",
    "a_t": "the advantage at token t in the OPD formula",
    "g_t": "the gate at token t in the OPD formula",
    "Ct": "a term of the simulated scaling law",
    # Words of the interface, of a policy text or of an example, not names.
    "Esc": "the key",
    "Host": "the HTTP header",
    "Even": "a cue word the extraction reads in a policy",
    "Otherwise": "a cue word the extraction reads in a policy",
    "means": "a cue word the extraction reads in a policy",
    "refunded": "a word the stemmer's docstring shows it stripping",
    "R1": "an example rule id",
    "cancel_reservation": "an example tool call of an agent",
    "gamma_retail": "an example of the fit's gamma_<dataset> columns",
    "think": "the contracts paper's name of an action that makes no progress",
    "CODE": "one of Phoenix's annotator kinds",
    "HUMAN": "one of Phoenix's annotator kinds",
    "lora_B": "PEFT's adapter tensor name",
    "HttpOnly": "a cookie attribute",
    "Secure": "a cookie attribute",
    # History.
    "store.models": "the module that was once the table registry, named as such",
}

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$")
SETTING = re.compile(r"^WORKBENCH_[A-Z0-9_<>]*$")
DOUBLE = re.compile(r"``([^`\n]+?)``")
PROMPT = re.compile(r"^[a-z]+(_[a-z]+)*_v\d+$")  # judge_v3, units_v1: workbench/prompts/*.md
# External modules docstrings name by their usual alias.
ALIASES = {"np": "numpy", "st": "streamlit", "pd": "pandas", "sa": "sqlalchemy"}


# --------------------------------------------------------------------------- the hook

@cache
def reference():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "_hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(markdown: str) -> dict[str, str]:
    """The CLI page cut at its command headings: ``"workbench graph closure"`` -> its text."""
    parts = re.split(r"^#{2,4} `(workbench[^`]*)` \{#[^}]+\}$", markdown, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[tuple]:
    """Every command line, found independently of the hook: each subparser by each name it
    answers to (aliases too)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _walk(sub, (*path, name))


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    ref = reference()
    parser = ref.cli_parser()
    page = ref.cli_markdown(parser)
    sections = _sections(page)
    missing = []
    commands = list(_walk(parser, ("workbench",)))
    assert len(commands) > 60, "the walk found too few commands: is the CLI still argparse?"
    for path, sub in commands:
        title = " ".join(path)
        text = sections.get(title)
        if text is None:
            missing.append(f"{title} (no section)")
            continue
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.option_strings:
                missing += [f"{title} {opt}" for opt in action.option_strings
                            if not re.search(rf"^- `(.*, )?{re.escape(opt)}[ ,`]", text, re.MULTILINE)]
            elif not re.search(rf"^- `\[?{re.escape(str(action.metavar or action.dest))}\b", text,
                               re.MULTILINE):
                missing.append(f"{title} <{action.dest}>")
    assert not missing, "not in the CLI reference: " + "; ".join(missing)
    # The commands `workbench --help` lists are the page's table of commands.
    top = {" ".join(path) for path, _ in commands if len(path) == 2}
    listed = set(re.findall(r"^\| \[`(workbench [^`]+)`\]", page, flags=re.MULTILINE))
    assert listed == top


def test_every_setting_is_in_the_settings_reference() -> None:
    from dataclasses import fields

    from workbench import settings
    from workbench.api.settings import ApiSettings
    from workbench.llm.config import ROLE_NAMES, EmbeddedConfig, RoleConfig

    page = reference().settings_markdown()
    wanted = [v.name for v in settings.VARIABLES] + [f.pattern for f in settings.FAMILIES]
    wanted += [settings.role_variable("judge", f.name) for f in fields(RoleConfig) if f.name != "name"]
    wanted += [settings.EMBEDDED_PREFIX + f.name.upper() for f in fields(EmbeddedConfig)]
    wanted += [settings.API_PREFIX + f.name.upper() for f in fields(ApiSettings) if f.name != "token"]
    wanted += [f"`{role}`" for role in ROLE_NAMES]
    missing = [name for name in wanted if name not in page]
    assert not missing, "not in the settings reference: " + ", ".join(missing)
    example = (ROOT / "workbench.toml.example").read_text(encoding="utf-8")
    assert example.strip() in page  # the whole example file, as it is


def test_the_api_reference_has_every_route_and_body() -> None:
    ref = reference()
    spec = ref.openapi_schema()
    page = ref.api_markdown(spec)
    for path, methods in spec["paths"].items():
        for method in methods:
            assert f"`{method.upper()} {path}`" in page
    for name in spec["components"]["schemas"]:
        assert f"### {name} {{#{name.lower()}}}" in page


def test_the_glossary_page_has_every_term() -> None:
    from workbench.words import TERMS

    page = reference().glossary_markdown()
    missing = [t.name for t in TERMS if f"**{reference()._cell(t.name)}**" not in page]
    assert not missing, missing


def test_every_page_marker_names_a_term_or_block() -> None:
    ref = reference()
    for page in _doc_pages():
        text = page.read_text(encoding="utf-8")
        for match in ref.TERM_MARKER.finditer(text):
            ref.term_markdown(match.group("name"))  # KeyError names the term
        for match in ref.BLOCK_MARKER.finditer(text):
            assert match.group("name") in ref.BLOCKS, f"{page}: {match.group()}"


# --------------------------------------------------------------------------- the code's names

@dataclass
class Symbols:
    """What the source defines, read with ``ast``."""

    modules: dict[str, Path] = field(default_factory=dict)           # dotted name -> file
    top: dict[str, dict[str, ast.AST]] = field(default_factory=dict)  # module -> name -> node
    imports: dict[str, dict[str, str]] = field(default_factory=dict)  # module -> name -> source
    stars: dict[str, list[str]] = field(default_factory=dict)         # module -> ``import *`` sources
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=dict)  # class name -> defs
    members: dict[int, set[str]] = field(default_factory=dict)        # id(class) -> names
    words: set[str] = field(default_factory=set)                      # every name defined
    strings: set[str] = field(default_factory=set)                    # short strings of the product
    test_strings: set[str] = field(default_factory=set)               # ... of tests/ and bench/


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _code_files() -> list[Path]:
    files = [ROOT / name for name in CODE_FILES]
    for name in CODE_ROOTS:
        files += sorted(p for p in (ROOT / name).rglob("*.py") if "migrations" not in p.parts)
    return files


def _targets(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The module ``from .x import y`` names, written whole."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _class_members(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(_targets(target))
        elif isinstance(node, ast.AnnAssign):
            names.update(_targets(node.target))
    for node in ast.walk(cls):  # self.x = ... in its methods
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "self"):
            names.add(node.attr)
    return names


def _module_level(found: Symbols, module: str, path: Path, tree: ast.Module) -> None:
    """What a module defines and imports at its top level (``TYPE_CHECKING`` imports too)."""
    top: dict[str, ast.AST] = {}
    imports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                top.update(dict.fromkeys(_targets(target), node))
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            source = _absolute(module, path, node)
            for alias in node.names:
                if alias.name == "*":
                    found.stars.setdefault(module, []).append(source)
                else:
                    imports[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.If):  # TYPE_CHECKING imports and guarded definitions
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module:
                    for alias in inner.names:
                        imports[alias.asname or alias.name] = f"{inner.module}.{alias.name}"
    found.top[module] = top
    found.imports[module] = imports
    found.words |= set(top) | set(imports)
    found.words.update(module.split("."))


def _names_used(node: ast.AST) -> Iterator[str]:
    """The names one node defines or uses: an attribute, a keyword, an import, a definition
    and its parameters."""
    if isinstance(node, ast.Attribute):  # what the code calls on others' objects
        yield node.attr
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        yield from ((a.asname or a.name).split(".")[-1] for a in node.names)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        yield from (a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                    args.vararg, args.kwarg) if a)


def _docstring_nodes(tree: ast.Module) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


@cache
def symbols() -> Symbols:
    found = Symbols()
    for path in _code_files():
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.modules[module] = path
        _module_level(found, module, path, tree)
        docstrings = _docstring_nodes(tree)
        # Strings of the product are values the docs may name; a test's or bench's, only in
        # their own docstrings; this file's lists (EXCEPTIONS, the examples) never.
        strings = found.test_strings if module.split(".")[0] in ("tests", "bench") else found.strings
        for node in ast.walk(tree):
            found.words.update(_names_used(node))
            if isinstance(node, ast.ClassDef):
                found.classes.setdefault(node.name, []).append(node)
                found.members[id(node)] = _class_members(node)
                found.words |= found.members[id(node)]
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 80
                    and id(node) not in docstrings and path != Path(__file__)):
                strings.update(re.findall(r"[A-Za-z_][\w.-]*", node.value))
    return found


def _class_has(name: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
    s = symbols()
    for cls in s.classes.get(name, ()):
        if member in s.members[id(cls)]:
            return True
        for base in cls.bases:  # inherited from a base the source defines
            base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
            if base_name and base_name not in seen and _class_has(base_name, member, seen | {name}):
                return True
    return False


def _resolve_in(module: str, chain: list[str], depth: int = 0) -> bool:
    """``chain`` (attribute names) defined in ``module``, following re-exports and classes."""
    s = symbols()
    if not chain:
        return True
    head, rest = chain[0], chain[1:]
    if f"{module}.{head}" in s.modules:
        return _resolve_in(f"{module}.{head}", rest, depth)
    node = s.top.get(module, {}).get(head)
    if node is None and head in s.imports.get(module, {}) and depth < 8:
        source = s.imports[module][head]
        owner, name = source.rsplit(".", 1)
        if owner in s.modules or source in s.modules:
            return _resolve_in(owner, [name, *rest], depth + 1)
        return _external(source, rest)
    if node is None and depth < 8:
        return any(_resolve_in(star, chain, depth + 1) for star in s.stars.get(module, ()))
    if node is None:
        return False
    if isinstance(node, ast.ClassDef) and rest:
        return _class_has(node.name, rest[0])  # one attribute deep; its value's type is not known
    return True  # a function's or variable's attributes are not followed


@cache
def _external(dotted: str, rest: tuple | list = ()) -> bool:
    """A name of another package: its top module must be installed (attributes not followed)."""
    top = dotted.split(".")[0]
    top = ALIASES.get(top, top)
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _setting(name: str) -> bool:
    from workbench import settings

    names = {v.name for v in settings.VARIABLES} | {f.pattern for f in settings.FAMILIES}
    if name in names:
        return True
    if "<" in name:  # a family written by its pattern, or part of one (``WORKBENCH_<ROLE>_``)
        return any(f.pattern.startswith(name) for f in settings.FAMILIES)
    prefixes = (settings.DEFAULT_PREFIX, settings.EMBEDDED_PREFIX, settings.API_PREFIX)
    from workbench.llm.config import ROLE_NAMES

    prefixes += tuple(settings.role_prefix(r) for r in ROLE_NAMES)
    return name.startswith(prefixes) or name == settings.PREFIX


def _path(text: str) -> bool | None:
    """True/False when ``text`` is a path under the repository's own folders, else None."""
    text = text.strip().rstrip("/")
    if text.startswith("./"):
        text = text[2:]
    if "/" not in text and text not in REPO_TOPS:
        return None
    if not text.startswith(tuple(t + "/" for t in REPO_TOPS)) and text not in REPO_TOPS:
        return None
    if text in GENERATED_PATHS or text in {f"docs/{uri}" for uri in reference().GENERATED}:
        return True
    if any(ch in text for ch in " <>|"):
        return None  # a pattern written for a person ("docs/evaluations/<name>.json")
    return _exists(text)


def _exists(text: str) -> bool:
    candidates = _expand_braces(text)
    for candidate in candidates:
        if any(ch in candidate for ch in "*?["):
            if not [p for p in ROOT.glob(candidate) if p.exists()]:
                return False
        elif not ((ROOT / candidate).exists() or (ROOT / (candidate + ".py")).exists()):
            return False
    return True


def _expand_braces(text: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", text)
    if not match:
        return [text]
    return [out for choice in match.group(1).split(",")
            for out in _expand_braces(text[:match.start()] + choice + text[match.end():])]


FILE_NAME = re.compile(r"^[\w.-]+\.(toml|ya?ml|jsonl?|md|csv|tsv|txt|gguf|parquet|html|xml|xsd|db|zip|"
                       r"log|lock|example|pem|whl|png|svg|ini|cfg|mako)$")
FIRST_PARTY = ("workbench", "store", "pages", "components", "tests", "bench", "app")


def _builtin(dotted: str) -> bool:
    import builtins

    thing: object = builtins
    for part in dotted.split("."):
        if not hasattr(thing, part):
            return False
        thing = getattr(thing, part)
    return True


def _known_word(word: str, in_tests: bool = False) -> bool:
    """Defined in the code (a module, class, function, parameter, attribute) or a value it
    uses (a string the product writes: a JSON key, a label; a test's docstring may also name
    the values tests write)."""
    s = symbols()
    return (word in s.words or word in s.strings or _builtin(word)
            or in_tests and word in s.test_strings)


def resolves(text: str, in_tests: bool = False) -> bool | None:
    """Whether a double-backticked ``text`` names something that exists; None when it is not
    a name at all (a command, an expression, a file name, a value written for a person).

    - a path under the repository's own folders must exist;
    - a ``WORKBENCH_*`` name must be a setting of ``workbench.settings`` (or a family's member);
    - a dotted name from a package of ours (``workbench.decision.decide``) must resolve through
      modules, re-exports and classes; one written by a module's last components
      (``commands._common.LAB_COMMANDS``) too, else its last part must be known to the code;
    - a class's attribute (``AuditTrace.from_dict``): the class must define or inherit it;
    - a name that looks like a class, a constant or a call (``DecisionSetting``, ``LAB_COMMANDS``,
      ``decide()``) must be defined in the code, imported by it, or a builtin;
    - a prompt's name (``units_v1``) must be a template of ``workbench/prompts/``;
    - any other name (``reference_rule``) must be defined or used by the code.
    """
    text = text.strip()
    path = _path(text)
    if path is not None:
        return path
    if SETTING.match(text):
        return _setting(text)
    if FILE_NAME.match(text):
        return None
    if text.endswith(".py") and re.match(r"^[\w/]+\.py$", text):
        return any(p.name == text.rsplit("/", 1)[-1] for p in _code_files())
    if not NAME.match(text):
        return None
    bare = text.removesuffix("()")
    s = symbols()
    parts = bare.split(".")
    if len(parts) == 1:
        if PROMPT.match(parts[0]):  # a prompt's name: one of the templates
            return (ROOT / "workbench" / "prompts" / f"{parts[0]}.md").is_file()
        return _known_word(parts[0], in_tests) or _external(parts[0])
    if parts[0] in FIRST_PARTY:
        return any(_resolve_in(m, parts[cut:]) for cut in range(len(parts), 0, -1)
                   for m in [".".join(parts[:cut])] if m in s.modules)
    for cut in range(len(parts) - 1, 0, -1):  # a module by its last components
        prefix = ".".join(parts[:cut])
        owners = [m for m in s.modules if m.endswith("." + prefix)]
        if owners:
            return any(_resolve_in(m, parts[cut:]) for m in owners) or _known_word(parts[-1], in_tests)
    if parts[0] in s.classes:  # ``AuditTrace.from_dict``
        return _class_has(parts[0], parts[1])
    if _builtin(bare):
        return True
    if parts[0] in s.words or parts[0] in s.strings:
        return True  # an attribute of a variable, a field or a value: its type is not known
    return _external(bare)


# --------------------------------------------------------------------------- where names are

def _doc_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


def _docstrings() -> Iterator[tuple[str, str]]:
    for path in _code_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    line = node.body[0].lineno if node.body else 1
                    yield f"{path.relative_to(ROOT)}:{line}", doc


def _double_backticked() -> Iterator[tuple[str, str]]:
    for where, doc in _docstrings():
        for match in DOUBLE.finditer(doc):
            yield where, match.group(1)
    for page in [*_doc_pages(), README]:
        text = page.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for match in DOUBLE.finditer(line):
                yield f"{page.relative_to(ROOT)}:{number}", match.group(1)


def test_every_double_backticked_name_resolves() -> None:
    unresolved: dict[str, list[str]] = {}
    seen = 0
    for where, text in _double_backticked():
        if text in EXCEPTIONS:
            continue
        ok = resolves(text, in_tests=where.startswith(("tests/", "bench/")))
        seen += ok is not None
        if ok is False:
            unresolved.setdefault(text, []).append(where)
    assert seen > 500, f"only {seen} names checked: is the scan still reading the docstrings?"
    assert not unresolved, (
        "names in double backticks that resolve to nothing in the code (rename them to what the "
        "code calls them now, or add them to EXCEPTIONS with the reason):\n" + "\n".join(
            f"  {name}: {', '.join(places[:3])}" + (f" (+{len(places) - 3})" if len(places) > 3 else "")
            for name, places in sorted(unresolved.items())))


def test_every_exception_is_still_needed() -> None:
    places: dict[str, list[str]] = {}
    for where, text in _double_backticked():
        if text in EXCEPTIONS:
            places.setdefault(text, []).append(where)
    stale = [name for name in EXCEPTIONS if name not in places
             or all(resolves(name, in_tests=w.startswith(("tests/", "bench/"))) for w in places[name])]
    assert not stale, f"EXCEPTIONS no longer needed (delete them): {stale}"


@pytest.mark.parametrize("text, expected", [
    ("workbench.decision.decide", True),          # a re-export through the package face
    ("workbench.decision.DecisionSetting", True),
    ("DecisionSetting", True),
    ("AuditTrace.from_dict", True),                # a class's method
    ("commands._common.LAB_COMMANDS", True),       # a module by its last components
    ("WORKBENCH_JUDGE_MODEL", True),               # a family member
    ("docs/architecture.md", True),
    ("ThresholdSetting", False),                   # a class that no longer exists
    ("workbench.decision.decide_all", False),
    ("store.thresholds.StaleVersion", False),      # named there, defined elsewhere
    ("WORKBENCH_NO_SUCH", False),
    ("shared/design/ARCHITECTURE.md", None),       # not a path of this repository: not checked
    ("docs/no-such-page.md", False),
    ("p >= threshold", None),                      # an expression, not a name
    ("judge_v3", True),                            # a prompt template
    ("judge_v1", False),                           # a template that is gone
])
def test_resolution(text: str, expected: bool | None) -> None:
    assert resolves(text) is expected


# --------------------------------------------------------------------------- links and paths

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SINGLE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _links(page: Path) -> Iterator[tuple[int, str]]:
    in_fence = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in LINK.finditer(line):
            yield number, match.group(1) or match.group(2)


def test_every_link_and_repository_path_of_a_page_exists() -> None:
    broken = []
    for page in [*_doc_pages(), README]:
        for number, target in _links(page):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # another site, or an anchor checked by mkdocs --strict
            file = (page.parent / target.split("#")[0]).resolve()
            generated = (file.is_relative_to(DOCS)
                         and file.relative_to(DOCS).as_posix() in reference().GENERATED)
            if not (file.exists() or generated):
                broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
        text = page.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            for match in SINGLE.finditer(line):
                if _path(match.group(1)) is False:
                    broken.append(f"{page.relative_to(ROOT)}:{number}: `{match.group(1)}`")
    assert not broken, "docs name files that are not in the repository:\n" + "\n".join(broken)


def test_every_result_file_is_quoted_on_an_evidence_page() -> None:
    evidence = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "evidence").glob("*.md"))
    missing = [p.name for p in sorted((DOCS / "evaluations").glob("*.json"))
               if f"docs/evaluations/{p.name}" not in evidence
               and not any(fnmatch.fnmatch(p.name, pat.split("/")[-1])
                           for pat in re.findall(r"docs/evaluations/[^`\s]*\*[^`\s]*", evidence))]
    assert not missing, f"result files no Evidence page quotes: {missing}"


def test_the_readme_fits_on_a_screen_or_three() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move details to docs/"
    text = "\n".join(lines)
    assert "PORT=" in text and "make demo" in text and "make test" in text
