"""Model roles and their settings, from ``workbench.toml`` and ``WORKBENCH_*`` variables.

Precedence, lowest to highest: built-in defaults (per role), the file's ``[defaults]`` table,
the file's ``[roles.<name>]`` table, ``WORKBENCH_DEFAULT_<SETTING>``, ``WORKBENCH_<ROLE>_<SETTING>``.
The file is ``$WORKBENCH_CONFIG`` if set, else ``./workbench.toml`` if present; without a
file every role uses the embedded model. ``workbench.toml.example`` documents every setting.

``model = "embedded"`` (= ``embedded:default``) is the embedded Qwen2.5-Coder-1.5B,
``embedded:small`` the 0.5B (``workbench.llm.weights``): each runs in its own in-process
server sized by ``[embedded]``, or in a ``model serve`` at ``[embedded].url`` / ``.small_url``.

API keys never live in the file: :func:`resolve_api_key` reads them at call time from the
environment or ``.streamlit/secrets.toml``, and nothing here stores or prints them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from workbench.llm.config_values import checked, from_env, table, typed_values
from workbench.llm.errors import LlmConfigError
from workbench.llm.redact import redact_url, remember
from workbench.llm.weights import (
    DEFAULT_MODEL,
    EMBEDDED_MODELS,
    EmbeddedModel,
    embedded_model,
    embedded_name_of,
)
from workbench.settings import CONFIG, DEFAULT_PREFIX, EMBEDDED_PREFIX, api_key_variable, role_prefix
from workbench.vocabulary import ModelRole, values

EMBEDDED = "embedded"
# The roles every configuration has (plain strings: the configuration's keys and role names).
ROLE_NAMES: tuple[str, ...] = values(ModelRole)
DEFAULT_CONFIG_FILE = Path("workbench.toml")
SECRETS_FILES = (Path(".streamlit/secrets.toml"), Path("~/.streamlit/secrets.toml"))

# litellm Router strategies a fleet may use (its names); others need settings we do not pass.
ROUTING_STRATEGIES = ("simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing-v2")

# Room a prompt needs besides the answer in one embedded server slot; below this a slot is
# too small for the product's prompts and we refuse the configuration up front.
MIN_PROMPT_ROOM = 1024

# Every model call runs at temperature 0.01, as in the first paper (appendix B), for every
# role. Recordings made earlier at 0.0 still replay: see ``GREEDY_EQUIVALENT`` in
# workbench/llm/recording.py. Answers of extraction and fusion are rule lists, hence longer.
DEFAULT_TEMPERATURE = 0.01
ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    ModelRole.EXTRACTOR: {"max_tokens": 2048},
    ModelRole.FUSER: {"max_tokens": 2048},
    ModelRole.KEYWORDER: {"max_tokens": 256},
    ModelRole.JUDGE: {"max_tokens": 512},
    ModelRole.MATCHER: {"max_tokens": 256},
}


@dataclass(frozen=True)
class RoleConfig:
    """How one role reaches its model. ``model`` is a litellm model string, ``embedded`` (the
    default embedded model) or ``embedded:<name>`` (e.g. ``embedded:small``)."""

    name: str
    model: str = EMBEDDED
    api_base: str | None = None
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = 512
    timeout: float = 300.0
    concurrency: int = 2
    retries: int = 2
    retry_backoff: float = 0.5
    seed: int | None = None
    api_key_env: str | None = None
    # Tokens one request may hold (prompt + answer); None: learn it from the embedded
    # server's slot size or litellm's model information (``workbench.audit.window``).
    context_window: int | None = None
    # A fleet: several servers of the same model, called through the litellm Router.
    endpoints: tuple[str, ...] = ()
    routing: str = "simple-shuffle"
    cooldown: float = 30.0
    fallback: str = ""  # another role whose server(s) answer when this role's all fail

    def __post_init__(self) -> None:
        remember(self.api_base, *self.endpoints)  # masked in every message from now on

    @property
    def is_embedded(self) -> bool:
        return self.embedded_name is not None

    @property
    def embedded_name(self) -> str | None:
        """Which embedded model (``default``, ``small``), None for any other model."""
        return embedded_name_of(self.model)

    @property
    def embedded_model(self) -> EmbeddedModel | None:
        """The embedded model the role uses, None for any other model (an unknown name was
        refused when the configuration was read)."""
        name = self.embedded_name
        return embedded_model(name) if name is not None else None

    @property
    def is_fleet(self) -> bool:
        """Calls go through the litellm Router: several endpoints, or a fallback."""
        return bool(self.endpoints or self.fallback)

    @property
    def servers(self) -> tuple[str, ...]:
        """The endpoints the Router may choose among (a lone api_base, or the model name
        when the provider chooses)."""
        return self.endpoints or (self.api_base or self.model,)

    @property
    def endpoint(self) -> str:
        """Where calls go, for messages: the api_base, or who chooses it (credentials in an
        address masked: this is what errors, logs and pages show)."""
        if self.endpoints:
            return f"a fleet of {len(self.endpoints)} ({', '.join(map(redact_url, self.endpoints))})"
        if self.api_base:
            return redact_url(self.api_base)
        if self.is_embedded:
            return "the embedded server (127.0.0.1, started on first use)"
        return f"the default endpoint of provider '{self.model.split('/', 1)[0]}'"


@dataclass(frozen=True)
class EmbeddedConfig:
    """The in-process llama.cpp server. ``ctx_size`` is split evenly over ``parallel`` slots."""

    # 2 slots x 16384: a RawSkill prompt of the CompliBench airlines policy (~10K tokens plus
    # the conversation) fits a slot; measured cost in README ("Context window").
    ctx_size: int = 32768
    parallel: int = 2
    threads: int = 0  # 0: os.cpu_count()
    port: int = 0  # 0: a free port
    startup_timeout: float = 300.0
    # MiB of earlier prompts llama.cpp keeps in memory beyond its slots, to answer a prompt
    # that starts like one of them without reading it again (0: none). Its own default is
    # 8192; measured here an audit's server grew to 10 GB resident with it.
    cache_ram: int = 2048
    cache_dir: str = ""  # "": ~/.cache/skillcdg-workbench/models (WORKBENCH_MODEL_CACHE wins)
    url: str = ""  # a running `workbench model serve` (.../v1) to use instead of starting one
    small_url: str = ""  # the same for the small model (`workbench model serve --model small`)

    def __post_init__(self) -> None:
        remember(self.url)

    @property
    def attached_url(self) -> str:
        """``url`` as an OpenAI base URL ending in /v1, or "" when the server runs in-process."""
        return self.attached_url_for(DEFAULT_MODEL)

    def attached_url_for(self, model: str) -> str:
        """The running server of the embedded model ``model`` as an OpenAI base URL ending in
        /v1 (``url`` for the default model, ``<model>_url`` for another), or "" when that
        model runs in-process."""
        base = getattr(self, url_field(model)).strip().rstrip("/")
        if not base:
            return ""
        return base if base.endswith("/v1") else f"{base}/v1"

    @property
    def slot_ctx(self) -> int:
        return self.ctx_size // self.parallel

    @property
    def n_threads(self) -> int:
        return self.threads or os.cpu_count() or 1


@dataclass(frozen=True)
class LlmConfig:
    roles: Mapping[str, RoleConfig]
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)
    source: str = "built-in defaults"

    def role(self, name: str) -> RoleConfig:
        try:
            return self.roles[name]
        except KeyError:
            raise LlmConfigError(
                f"unknown model role '{name}'; configured roles: {', '.join(self.roles)}. "
                f"Add a [roles.{name}] table to workbench.toml to define it."
            ) from None

    def with_role(self, name: str, **changes: Any) -> LlmConfig:
        """A copy with one role's settings changed (for tools and tests)."""
        roles = dict(self.roles)
        roles[name] = dataclasses.replace(self.role(name), **changes)
        return dataclasses.replace(self, roles=roles)

    def attached_to(self, url: str) -> LlmConfig:
        """A copy whose embedded roles use the running ``workbench model serve`` at ``url``."""
        embedded = dataclasses.replace(self.embedded, url=url)
        _validate(embedded, "--attach")
        return dataclasses.replace(self, embedded=embedded)


def url_field(model: str) -> str:
    """The [embedded] setting naming a running server of the embedded model ``model``."""
    return "url" if model == DEFAULT_MODEL else f"{model}_url"


def attached_url_of(config: LlmConfig, role: RoleConfig) -> str:
    """The running `workbench model serve` an embedded ``role`` is attached to, or "" (it
    runs in-process, or the role is not embedded)."""
    name = role.embedded_name
    return config.embedded.attached_url_for(name) if name is not None else ""


ROLE_FIELDS = {f.name: f for f in fields(RoleConfig) if f.name != "name"}
EMBEDDED_FIELDS = {f.name: f for f in fields(EmbeddedConfig)}


def load_config(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> LlmConfig:
    """Read the configuration. Raises LlmConfigError naming the bad file, key or variable."""
    env = os.environ if env is None else env
    file_path = _config_path(path, env)
    text = ""
    if file_path is not None:
        try:
            text = settings_text(file_path.read_bytes(), file_path)
        except FileNotFoundError:
            raise LlmConfigError(
                f"configuration file {file_path} does not exist; create it from "
                f"workbench.toml.example or unset {CONFIG.name}"
            ) from None
    return config_from_text(text, str(file_path) if file_path else "built-in defaults", env)


def settings_text(data: bytes, path: Path) -> str:
    """A settings file's bytes as text; LlmConfigError when they are not UTF-8 (the one
    wording for the loader and the Settings page's reader)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LlmConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                             "re-save it as UTF-8") from None


def config_from_text(text: str, where: str, env: Mapping[str, str] | None = None) -> LlmConfig:
    """The configuration a workbench.toml with ``text`` gives (``where`` names it in errors):
    what :func:`load_config` reads, and what the Settings page checks before it writes."""
    env = os.environ if env is None else env
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LlmConfigError(f"{where} is not valid TOML: {exc}") from None

    file_defaults = table(data, "defaults", where)
    file_roles = table(data, "roles", where)
    names = list(ROLE_NAMES) + [n for n in file_roles if n not in ROLE_NAMES]
    roles: dict[str, RoleConfig] = {}
    for name in names:
        settings: dict[str, Any] = dict(ROLE_DEFAULTS.get(name, {}))
        settings.update(checked(file_defaults, ROLE_FIELDS, f"{where} [defaults]"))
        own = table(file_roles, name, f"{where} [roles]")
        settings.update(checked(own, ROLE_FIELDS, f"{where} [roles.{name}]"))
        settings.update(from_env(env, DEFAULT_PREFIX, ROLE_FIELDS))
        settings.update(from_env(env, role_prefix(name), ROLE_FIELDS))
        roles[name] = _build(RoleConfig, {"name": name, **settings}, f"role '{name}' ({where})")

    emb_settings = checked(table(data, "embedded", where), EMBEDDED_FIELDS, f"{where} [embedded]")
    emb_settings.update(from_env(env, EMBEDDED_PREFIX, EMBEDDED_FIELDS))
    embedded = _build(EmbeddedConfig, emb_settings, f"[embedded] ({where})")
    config = LlmConfig(roles=roles, embedded=embedded, source=where)
    _check_slots(config)
    _check_fallbacks(config)
    return config


def resolve_api_key(
    role: RoleConfig,
    env: Mapping[str, str] | None = None,
    secrets_files: tuple[Path, ...] = SECRETS_FILES,
) -> str | None:
    """The role's API key, looked up at call time; None lets litellm use its own variables.

    Order: ``WORKBENCH_<ROLE>_API_KEY``; then the variable named by ``api_key_env`` in the
    environment, then as a top-level key of ``.streamlit/secrets.toml`` (project, then home).
    """
    env = os.environ if env is None else env
    direct = env.get(api_key_variable(role.name))
    if direct:
        return direct
    if not role.api_key_env:
        return None
    if env.get(role.api_key_env):
        return env[role.api_key_env]
    for secrets in secrets_files:
        secrets = secrets.expanduser()
        if secrets.is_file():
            try:
                value = tomllib.loads(secrets.read_text(encoding="utf-8")).get(role.api_key_env)
            except tomllib.TOMLDecodeError as exc:
                raise LlmConfigError(f"{secrets} is not valid TOML: {exc}") from None
            if isinstance(value, str) and value:
                return value
    return None


def api_key_source(role: RoleConfig, env: Mapping[str, str] | None = None) -> str:
    """Where the key would come from, for display (never the key itself)."""
    env = os.environ if env is None else env
    direct = api_key_variable(role.name)
    if env.get(direct):
        return f"env {direct}"
    if role.api_key_env:
        found = resolve_api_key(role, env) is not None
        return f"{role.api_key_env} ({'set' if found else 'NOT set'})"
    return "none (provider default variables)" if not role.is_embedded else "not needed"


def _config_path(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    if path:
        return Path(path)
    if configured := CONFIG.read(env):
        return Path(configured)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def _build(cls: type, settings: dict[str, Any], where: str) -> Any:
    obj = cls(**typed_values(cls, settings, where))
    _validate(obj, where)
    return obj


def _validate(obj: Any, where: str) -> None:
    problems: list[str] = []
    if isinstance(obj, RoleConfig):
        problems.extend(_role_problems(obj))
    if isinstance(obj, EmbeddedConfig):
        problems.extend(_embedded_problems(obj))
    if problems:
        raise LlmConfigError(f"{where}: " + "; ".join(problems))


def _role_problems(obj: RoleConfig) -> list[str]:
    problems: list[str] = []
    if not obj.model:
        problems.append("model must not be empty (use 'embedded' or a litellm model string)")
    elif obj.embedded_name is not None and obj.embedded_name not in EMBEDDED_MODELS:
        known = ", ".join(f"embedded:{n} ({m.title})" for n, m in EMBEDDED_MODELS.items())
        problems.append(f"model {obj.model!r} names no embedded model; use 'embedded' (the "
                        f"default) or one of {known}")
    if not 0.0 <= obj.temperature <= 2.0:
        problems.append(f"temperature {obj.temperature} is outside 0..2")
    for key in ("max_tokens", "concurrency"):
        if getattr(obj, key) < 1:
            problems.append(f"{key} must be at least 1")
    if obj.timeout <= 0:
        problems.append("timeout must be positive (seconds)")
    if obj.retries < 0 or obj.retry_backoff < 0:
        problems.append("retries and retry_backoff must not be negative")
    if obj.context_window is not None and obj.context_window < obj.max_tokens + MIN_PROMPT_ROOM:
        problems.append(
            f"context_window {obj.context_window} leaves less than {MIN_PROMPT_ROOM} tokens "
            f"for the prompt besides max_tokens {obj.max_tokens}; give the model's real window"
        )
    problems.extend(_fleet_problems(obj))
    return problems


def _embedded_problems(obj: EmbeddedConfig) -> list[str]:
    problems: list[str] = []
    if obj.parallel < 1 or obj.ctx_size < 512:
        problems.append("parallel must be at least 1 and ctx_size at least 512")
    if obj.cache_ram < 0:
        problems.append("cache_ram must be 0 (none) or more MiB")
    if obj.threads < 0 or not 0 <= obj.port <= 65535 or obj.startup_timeout <= 0:
        problems.append("threads >= 0, port in 0..65535 and startup_timeout > 0 are required")
    for key in (url_field(name) for name in EMBEDDED_MODELS):
        url = getattr(obj, key).strip()
        if url and not re.match(r"https?://[^/\s]+", url):
            problems.append(
                f"{key} {redact_url(url)!r} is not an http(s) address; give the one "
                "`workbench model serve` prints, e.g. http://127.0.0.1:8091/v1, or leave it empty"
            )
    return problems


def _fleet_problems(role: RoleConfig) -> list[str]:
    problems: list[str] = []
    if role.routing not in ROUTING_STRATEGIES:
        problems.append(f"routing {role.routing!r} is not one of {', '.join(ROUTING_STRATEGIES)}")
    if role.cooldown < 0:
        problems.append("cooldown must not be negative (seconds)")
    if not role.endpoints:
        return problems
    if role.is_embedded:
        problems.append(
            "endpoints need a litellm model string served by every endpoint (e.g. "
            "model = \"openai/Qwen2.5-7B-Instruct\"), not 'embedded'"
        )
    if role.api_base:
        problems.append(
            "set either api_base (one server) or endpoints (a fleet), not both; "
            "add the api_base to the endpoints list"
        )
    bad = [e for e in role.endpoints if not re.match(r"https?://[^/\s]+", e)]
    if bad:
        problems.append(f"endpoints {[redact_url(e) for e in bad]} are not http(s) addresses "
                        "like http://gpu-1:8000/v1")
    if len(set(role.endpoints)) != len(role.endpoints):
        problems.append("endpoints lists the same address twice")
    return problems


def _check_fallbacks(config: LlmConfig) -> None:
    for role in config.roles.values():
        if not role.fallback:
            continue
        where = f"[roles.{role.name}].fallback ({config.source})"
        other = config.roles.get(role.fallback)
        if other is None or other.name == role.name:
            raise LlmConfigError(
                f"{where}: {role.fallback!r} is not another role; name a role such as "
                f"[roles.{role.name}_backup] that defines the fallback model and its server"
            )
        if role.is_embedded or (other.is_embedded and not attached_url_of(config, other)):
            raise LlmConfigError(
                f"{where}: the embedded model runs in this process and cannot be part of a "
                "Router; serve it with `workbench model serve` and set [embedded].url "
                f"(.small_url for embedded:small), or give role '{other.name}' an "
                "OpenAI-compatible api_base"
            )
        if other.fallback:
            raise LlmConfigError(
                f"{where}: role '{other.name}' has a fallback of its own; chains of fallbacks "
                f"are not supported, list the servers as endpoints of '{other.name}' instead"
            )


def _check_slots(config: LlmConfig) -> None:
    emb = config.embedded
    for role in config.roles.values():
        if attached_url_of(config, role):
            continue  # a running server: its own --ctx-size and --parallel apply, not these
        if role.is_embedded and role.max_tokens + MIN_PROMPT_ROOM > emb.slot_ctx:
            raise LlmConfigError(
                f"role '{role.name}' may answer with {role.max_tokens} tokens, but each of the "
                f"embedded server's {emb.parallel} slots holds only {emb.slot_ctx} tokens "
                f"(ctx_size {emb.ctx_size} / parallel {emb.parallel}), leaving less than "
                f"{MIN_PROMPT_ROOM} for the prompt. Raise [embedded].ctx_size, lower "
                f"[embedded].parallel, or lower [roles.{role.name}].max_tokens ({config.source})"
            )
