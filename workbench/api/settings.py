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
    token: str = ""  # from WORKBENCH_API_TOKEN or token_file, never from the TOML file

    @property
    def capacity(self) -> int:
        """Requests held at once (auditing or waiting): one more is answered 429."""
        return self.concurrency + self.queue

    def with_changes(self, **changes: Any) -> ApiSettings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


FILE_KEYS = {f.name: f.type for f in fields(ApiSettings) if f.name != "token"}
INT_KEYS = ("port", "concurrency", "queue")


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
    settings = ApiSettings(**values)
    return replace(settings, token=_token(settings, env))


def _int(key: str, value: Any) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ApiSettingsError(f"api setting {key} = {value!r} is not a whole number",
                               f"give {key} as a number") from None
    return n


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
