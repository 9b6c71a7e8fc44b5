"""Every ``WORKBENCH_*`` environment variable the workbench reads, named once with what it does.

Each single variable is a :class:`Variable`: its name and one line saying what it sets and
its default. Readers call ``VARIABLE.read(env)`` where they read it before (at call time, so
a test that monkeypatches the environment sees its value) and keep their own parsing and
default: this module names the variables, it does not change how any is read.

Five **families** are names built from a role or a setting key; the loaders that read them
build the names with the helpers here (``role_variable``, ...) and read every member
generically, so the members are not listed one by one:

- ``WORKBENCH_<ROLE>_<SETTING>``: one role's setting (``WORKBENCH_JUDGE_MODEL``,
  ``WORKBENCH_EXTRACTOR_API_BASE``, ...), over ``[roles.<role>]`` (``workbench.llm.config``);
- ``WORKBENCH_DEFAULT_<SETTING>``: the same setting for every role, under the role's own;
- ``WORKBENCH_<ROLE>_API_KEY``: a role's API key, read at call time, never stored;
- ``WORKBENCH_EMBEDDED_<SETTING>``: the embedded model's ``[embedded]`` settings (``URL``,
  ``SMALL_URL``, ``CTX_SIZE``, ...);
- ``WORKBENCH_API_<KEY>``: the audit API's ``[api]`` settings (``workbench.api.settings``).

The documentation's settings reference (``docs/reference/settings.md``) is generated from this
module when the site is built; ``tests/test_settings_documented.py`` fails when a name read
anywhere is in neither this registry, a docs page nor workbench.toml.example.

Numeric variables share one parser, :func:`env_number`: a bad value (not a number, or below
the minimum) is a setup error that names the variable and what it accepts, instead of a
silent fallback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WorkbenchError

PREFIX = "WORKBENCH_"


@dataclass(frozen=True)
class Variable:
    """One ``WORKBENCH_*`` variable: its ``name`` and ``doc`` (what it sets, its default)."""

    name: str
    doc: str

    def read(self, env: Mapping[str, str] | None = None, default: str | None = None) -> str | None:
        """The raw value now, from ``env`` (default ``os.environ``); ``default`` when unset."""
        return (os.environ if env is None else env).get(self.name, default)


@dataclass(frozen=True)
class Family:
    """Variables whose names are built from a role or a setting key (``pattern``)."""

    pattern: str
    doc: str


DB = Variable("WORKBENCH_DB", "SQLAlchemy URL (or SQLite path) of the workbench database; "
              "default sqlite:///.workbench/workbench.db")
CONFIG = Variable("WORKBENCH_CONFIG", "the workbench.toml with the model roles and [api]; "
                  "default ./workbench.toml when present, else built-in defaults")
LLM_MODE = Variable("WORKBENCH_LLM_MODE", "model calls live, record or replay; default live")
LLM_RECORDINGS = Variable("WORKBENCH_LLM_RECORDINGS", "the .jsonl recordings (replay: also a "
                          "folder of them) for record/replay mode; no default")
MODEL_CACHE = Variable("WORKBENCH_MODEL_CACHE", "where the assembled embedded models are kept "
                       "(over [embedded].cache_dir); default ~/.cache/skillcdg-workbench/models")
AUDIT_TIME_LIMIT = Variable("WORKBENCH_AUDIT_TIME_LIMIT", "seconds of audit work per case, "
                            "model calls not counted; default 120, 0 for none")
BASELINES_DIR = Variable("WORKBENCH_BASELINES_DIR", "where the LightRAG/GraphRAG baselines keep "
                         "their indexes; default .workbench/baselines")
EMBEDDINGS_CACHE = Variable("WORKBENCH_EMBEDDINGS_CACHE", "disk cache of the dense baseline's "
                            "embeddings (empty: none); default .workbench/embeddings")
EVAL_DIR = Variable("WORKBENCH_EVAL_DIR", "where `workbench evaluate` writes results and the "
                    "Studies page (and Evaluate's activation study) reads them; default "
                    ".workbench/evaluations")
REFERENCE_INDEX = Variable("WORKBENCH_REFERENCE_INDEX", "the hand-built reference index the "
                           "Skills page measures an extraction against; default "
                           "fixtures/demo/index.json")
TRAIN_RUNS = Variable("WORKBENCH_TRAIN_RUNS", "the folder of training runs the training-runs "
                      "panel opens with; default .workbench/train")
API_TOKEN = Variable("WORKBENCH_API_TOKEN", "the bearer token of `workbench api` (over "
                     "[api].token_file); no default: loopback only without one")
SESSION_SECRET = Variable("WORKBENCH_SESSION_SECRET", "the key sign-in tokens are signed with "
                          "(32+ characters); default one the store makes once and keeps")
SESSION_HOURS = Variable("WORKBENCH_SESSION_HOURS", "how long a sign-in lasts, in hours; "
                         "default 12")
USER = Variable("WORKBENCH_USER", "who a command acts as (the --as default); no default")
ZIP_MAX_MEMBERS = Variable("WORKBENCH_ZIP_MAX_MEMBERS", "entries a zip of SKILLs may have; "
                           "default 10,000")
ZIP_MAX_BYTES = Variable("WORKBENCH_ZIP_MAX_BYTES", "total unpacked bytes of a zip's SKILL.md "
                         "members; default 104,857,600")
ZIP_MAX_RATIO = Variable("WORKBENCH_ZIP_MAX_RATIO", "compression ratio a zip member over 64 KiB "
                         "may have; default 100")

CONTRACTS = Variable("WORKBENCH_CONTRACTS", "folder of the skill contracts (*.yaml) the audit "
                     "API's /v1/contracts/{name}/check serves; default .workbench/contracts")
CONTRACT_LOG = Variable("WORKBENCH_CONTRACT_LOG", "JSONL log of tool calls the contract check "
                        "blocked at run time; default .workbench/contract_checks.jsonl")

OUTBOUND_ALLOW = Variable("WORKBENCH_OUTBOUND_ALLOW", "hosts that webhooks and --push may "
                          "reach although they are loopback, private or link-local, "
                          "comma-separated (with [outbound] allow in workbench.toml); default "
                          "none")

VARIABLES: tuple[Variable, ...] = (
    DB, CONFIG, LLM_MODE, LLM_RECORDINGS, MODEL_CACHE, AUDIT_TIME_LIMIT, BASELINES_DIR,
    EMBEDDINGS_CACHE, EVAL_DIR, REFERENCE_INDEX, TRAIN_RUNS, API_TOKEN, SESSION_SECRET,
    SESSION_HOURS, USER, ZIP_MAX_MEMBERS, ZIP_MAX_BYTES, ZIP_MAX_RATIO, CONTRACTS, CONTRACT_LOG,
    OUTBOUND_ALLOW,
)

DEFAULT_PREFIX = PREFIX + "DEFAULT_"
EMBEDDED_PREFIX = PREFIX + "EMBEDDED_"
API_PREFIX = PREFIX + "API_"

FAMILIES: tuple[Family, ...] = (
    Family("WORKBENCH_<ROLE>_<SETTING>", "one role's setting, over the file's [roles.<role>]"),
    Family("WORKBENCH_DEFAULT_<SETTING>", "a setting for every role, under the role's own"),
    Family("WORKBENCH_<ROLE>_API_KEY", "a role's API key, read at call time and never stored"),
    Family("WORKBENCH_EMBEDDED_<SETTING>", "an [embedded] setting of the embedded model"),
    Family("WORKBENCH_API_<KEY>", "an [api] setting of `workbench api`"),
)


def evaluations_dir() -> Path:
    """Where ``workbench evaluate`` and the studies write results and the Evaluate page reads
    them (``WORKBENCH_EVAL_DIR``, default ``.workbench/evaluations``)."""
    return Path(EVAL_DIR.read() or Path(".workbench") / "evaluations")


def role_prefix(role: str) -> str:
    """``WORKBENCH_<ROLE>_``, the role's name upper-cased with each dash made ``_``."""
    return f"{PREFIX}{role.upper().replace('-', '_')}_"


def role_variable(role: str, setting: str) -> str:
    """``WORKBENCH_<ROLE>_<SETTING>``, e.g. ``role_variable("judge", "model")``."""
    return role_prefix(role) + setting.upper()


def default_variable(setting: str) -> str:
    """``WORKBENCH_DEFAULT_<SETTING>``."""
    return DEFAULT_PREFIX + setting.upper()


def overriding_names(role: str, setting: str) -> tuple[str, str]:
    """The variables that override ``setting`` of ``role`` in the file, strongest first."""
    return role_variable(role, setting), default_variable(setting)


def api_key_variable(role: str) -> str:
    """``WORKBENCH_<ROLE>_API_KEY``."""
    return role_variable(role, "api_key")


class SettingError(WorkbenchError, ValueError):
    """A ``WORKBENCH_*`` variable holds a value the setting does not accept."""

    fatal = True


def env_number(name: str, default: float, *, minimum: float = 0.0, integer: bool = False) -> float:
    """``float(os.environ[name])`` (or its int), ``default`` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = None
    if value is None or value != value or value < minimum:  # NaN compares unequal
        kind = "a whole number" if integer else "a number"
        raise SettingError(f"{name}={raw!r} is not {kind} of at least {minimum:g}",
                           f"set {name} to {kind} >= {minimum:g}, or unset it for the "
                           f"default ({default:g})")
    return value
