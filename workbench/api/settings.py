"""The audit API's settings: ``[api]`` in ``workbench.toml``, ``WORKBENCH_API_*`` variables,
then the command line, each overriding the one before.

    [api]
    host = "127.0.0.1"     # a non-loopback address needs a token
    port = 8765
    dataset = "api"        # where requests' cases and traces are stored
    run_id = "api"
    concurrency = 2        # audits at once
    queue = 8              # requests waiting beyond those; more get 429
    token_file = ""        # a file holding the bearer token (or WORKBENCH_API_TOKEN)
    max_body_bytes = 4194304  # a request body above this is refused with 413 (4 MiB)
    body_timeout_s = 30    # the whole body must arrive within this, else 408 and closed
    header_timeout_s = 10  # a connection's request line and headers must arrive within this
    keep_alive_s = 5       # an idle keep-alive connection is closed after this
    service_user = "api"   # the identity the API stores cases and traces as ...
    service_role = "analyst"  # ... and its role (it must allow importing cases and storing results)
    write_ahead = ""       # a directory: answer once the request is fsynced there, store it after
                           # (workbench.api.write_ahead; "" stores each request before answering)
    contract_rate = 20     # contract checks a second (bursts of twice that); more get 429

The token is never a setting of the file itself (the file is shared and shown on the
Settings page): it comes from ``WORKBENCH_API_TOKEN`` or the file ``token_file`` names.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.identity.roles import ROLES, Actor, may
from workbench.llm.config import DEFAULT_CONFIG_FILE
from workbench.settings import API_PREFIX, API_TOKEN, CONFIG

MIN_TOKEN_CHARS = 16


class ApiSettingsError(WorkbenchError, ValueError):
    """The API cannot start with these settings; the message says which and the fix."""

    fatal = True


@dataclass(frozen=True)
class ApiSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    dataset: str = "api"
    run_id: str = "api"
    concurrency: int = 2
    queue: int = 8
    token_file: str = ""
    max_body_bytes: int = 4 * 1024 * 1024
    body_timeout_s: float = 30.0
    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    service_user: str = "api"
    service_role: str = "analyst"
    write_ahead: str = ""
    contract_rate: float = 20.0
    token: str = ""  # from WORKBENCH_API_TOKEN or token_file, never from the TOML file

    @property
    def capacity(self) -> int:
        """Requests held at once (auditing or waiting): one more is answered 429."""
        return self.concurrency + self.queue

    @property
    def actor(self) -> Actor:
        """Who the API's store writes are made as (checked by :func:`check_settings`)."""
        return Actor.signed_in(self.service_user, self.service_role)

    def with_changes(self, **changes: Any) -> ApiSettings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


FILE_KEYS = {f.name: f.type for f in fields(ApiSettings) if f.name != "token"}
INT_KEYS = ("port", "concurrency", "queue", "max_body_bytes")
FLOAT_KEYS = ("body_timeout_s", "header_timeout_s", "keep_alive_s")  # seconds
NUMBER_KEYS = (*FLOAT_KEYS, "contract_rate")
# What the service identity writes (``store.audit_repo.save_case_and_trace`` requires both).
SERVICE_ACTIONS = ("import cases", "store audit results")


def load_api_settings(path: str | os.PathLike[str] | None = None,
                      env: Mapping[str, str] | None = None) -> ApiSettings:
    """``[api]`` of the configuration file (``WORKBENCH_CONFIG`` or ./workbench.toml), then
    ``WORKBENCH_API_<KEY>`` variables; the token last."""
    env = os.environ if env is None else env
    configured = CONFIG.read(env)
    file = Path(path) if path else Path(configured) if configured else (
        DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None)
    values: dict[str, Any] = {}
    if file is not None and file.is_file():
        try:
            table = tomllib.loads(file.read_text(encoding="utf-8")).get("api", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ApiSettingsError(f"{file} cannot be read: {exc}", "fix the file (TOML, UTF-8)") from None
        if not isinstance(table, dict):
            raise ApiSettingsError(f"{file}: [api] must be a table", "write [api] and key = value lines")
        for key, value in table.items():
            if key not in FILE_KEYS:
                hint = (f"put the token in {API_TOKEN.name} or a file named by token_file"
                        if key == "token" else f"known settings: {', '.join(FILE_KEYS)}")
                raise ApiSettingsError(f"{file} [api]: unknown setting {key!r}", hint)
            values[key] = value
    for key in FILE_KEYS:
        if (raw := env.get(API_PREFIX + key.upper())) not in (None, ""):
            values[key] = raw
    for key in INT_KEYS:
        if key in values:
            values[key] = _int(key, values[key])
    for key in NUMBER_KEYS:
        if key in values:
            values[key] = _float(key, values[key])
    settings = ApiSettings(**values)
    return replace(settings, token=_token(settings, env))


def setting_name(key: str) -> str:
    """How a user sets ``key``, for hints: the ``[api]`` line and its variable."""
    return f"[api] {key} ({API_PREFIX}{key.upper()})"


def _int(key: str, value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ApiSettingsError(f"api setting {key} = {value!r} is not a whole number",
                               f"give {key} as a number") from None
    return n


def _float(key: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ApiSettingsError(f"api setting {key} = {value!r} is not a number of seconds",
                               f"give {key} as a number, e.g. {key} = 30") from None


def _token(settings: ApiSettings, env: Mapping[str, str]) -> str:
    if token := API_TOKEN.read(env):
        return token.strip()
    if settings.token_file:
        try:
            return Path(settings.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ApiSettingsError(f"token_file {settings.token_file} cannot be read ({exc.strerror})",
                                   "point token_file at a readable file holding the token") from None
    return ""


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def check_settings(settings: ApiSettings) -> None:
    """Refuse what must not start: an address others can reach without a token, a token too
    short to guess-proof, limits below one."""
    if not is_loopback(settings.host) and not settings.token:
        raise ApiSettingsError(
            f"refusing to serve the audit API on {settings.host} without a bearer token: anyone "
            "who can reach it could run audits and read stored conversations",
            f"set {API_TOKEN.name} (or [api] token_file), or serve on 127.0.0.1")
    if settings.token and len(settings.token) < MIN_TOKEN_CHARS:
        raise ApiSettingsError(f"the API token has {len(settings.token)} characters",
                               f"use at least {MIN_TOKEN_CHARS} random characters "
                               "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    if settings.concurrency < 1 or settings.queue < 0:
        raise ApiSettingsError("api concurrency must be at least 1 and queue at least 0",
                               "set e.g. concurrency = 2, queue = 8")
    if not settings.dataset.strip() or not settings.run_id.strip():
        raise ApiSettingsError("api dataset and run_id must not be empty",
                               "name where the API's traces are stored")
    _check_limits(settings)
    _check_service_identity(settings)


def _check_limits(settings: ApiSettings) -> None:
    if settings.max_body_bytes < 1024:
        raise ApiSettingsError(f"api max_body_bytes = {settings.max_body_bytes} is below 1024",
                               "set max_body_bytes to the largest request you accept, "
                               "e.g. 4194304 (4 MiB)")
    for key in FLOAT_KEYS:
        value = getattr(settings, key)
        if not 0 < value <= 3600:  # also NaN and infinity
            raise ApiSettingsError(f"api {key} = {value} is not between 0 and 3600 seconds",
                                   f"set {key} to a few seconds, e.g. {key} = "
                                   f"{getattr(ApiSettings, key):g}")
    if not 0 < settings.contract_rate <= 100_000:  # also NaN and infinity
        raise ApiSettingsError(f"api contract_rate = {settings.contract_rate} is not a number of "
                               "checks a second above 0", "set e.g. contract_rate = 20")


def _check_service_identity(settings: ApiSettings) -> None:
    if not settings.service_user.strip():
        raise ApiSettingsError("api service_user is empty",
                               "name the identity the API stores cases and traces as, e.g. api")
    if settings.service_role not in ROLES:
        raise ApiSettingsError(f"api service_role {settings.service_role!r} is not a role",
                               f"use one of {', '.join(ROLES)} (analyst is enough)")
    refused = [a for a in SERVICE_ACTIONS if not may(settings.service_role, a)]
    if refused:
        raise ApiSettingsError(
            f"api service_role {settings.service_role!r} may not {' or '.join(refused)}, so "
            "every audit would be refused when it is stored",
            "set service_role = \"analyst\" (or reviewer, admin)")
