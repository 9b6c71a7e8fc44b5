"""Changing a role's model settings in workbench.toml: the one write path (the Settings page).

    snap = read_settings_file(settings_file_path())
    save_role_settings(snap.path, "judge", {"temperature": 0.2}, actor=actor,
                       base_hash=snap.content_hash)

:func:`save_role_settings` writes only when all of these hold, else raises and writes nothing:

- the actor may "change settings" (``workbench.identity.roles.require``: admins; single-user mode);
- only :data:`EDITABLE` settings change, and none looks like an API key (keys come from the
  environment or ``.streamlit/secrets.toml``, never from this file);
- the file on disk is still the one the caller read (``base_hash``): two admins, or an edit by
  hand in between, get :class:`StaleSettings` instead of a silent overwrite;
- the resulting file loads with the same ``config_from_text`` that ``load_config`` uses, gives
  the role exactly the requested values (a ``WORKBENCH_*`` variable that overrides one is
  named), and leaves every other table and key as it was.

No TOML writer is installed (``tomllib`` only reads), so the edit is made in the text: the
``[roles.<name>]`` table's changed lines are rewritten (``key = value``; an inline comment on
a rewritten line is lost), a missing key is added after the table's last setting, a missing
table is appended at the end. Everything else (comments, order, blank lines, other tables)
stays byte for byte. A layout this cannot edit (the role given as an inline table or dotted
keys) is refused by the reparse check with a hint to edit the file by hand.

The file is replaced atomically (a temporary file in the same folder, then ``os.replace``),
under a lock file beside it so two saves in different processes cannot interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from workbench.identity.roles import Actor, require
from workbench.llm.config import (
    DEFAULT_CONFIG_FILE,
    ROLE_FIELDS,
    LlmConfig,
    config_from_text,
    settings_text,
)
from workbench.llm.errors import LlmConfigError
from workbench.llm.redact import MASK, has_secret
from workbench.settings import CONFIG, overriding_names

# The settings the Settings page edits (RoleConfig fields); the rest stay file-only.
EDITABLE = ("model", "api_base", "temperature", "max_tokens", "concurrency", "timeout")

ACTION = "change settings"


class StaleSettings(LlmConfigError):
    """The file changed since the caller read it; nothing was written."""

    fatal = False


@dataclass(frozen=True)
class SettingsFile:
    """workbench.toml as read: its text ("" when it does not exist yet) and content hash."""

    path: Path
    text: str
    content_hash: str
    exists: bool


def settings_file_path(env: Mapping[str, str] | None = None) -> Path:
    """Where settings are read from and saved to: ``$WORKBENCH_CONFIG``, else
    ``./workbench.toml`` (created by the first save)."""
    env = os.environ if env is None else env
    configured = CONFIG.read(env)
    return Path(configured) if configured else DEFAULT_CONFIG_FILE


def content_hash(data: bytes | None) -> str:
    """The hash a save compares (``None``: no file yet, which differs from an empty file)."""
    return "absent" if data is None else hashlib.sha256(data).hexdigest()


def read_settings_file(path: str | os.PathLike[str]) -> SettingsFile:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return SettingsFile(path, "", content_hash(None), False)
    return SettingsFile(path, settings_text(data, path), content_hash(data), True)


def save_role_settings(
    path: str | os.PathLike[str],
    role: str,
    changes: Mapping[str, Any],
    *,
    actor: Actor,
    base_hash: str,
    env: Mapping[str, str] | None = None,
) -> LlmConfig:
    """Set ``changes`` (setting -> value, settings from :data:`EDITABLE`) in ``[roles.<role>]``
    of the workbench.toml at ``path`` and return the configuration it now gives.

    Raises ``NotAllowed`` (the actor may not change settings), :class:`StaleSettings` (the file
    is no longer the one hashed as ``base_hash``), ``LlmConfigError`` (an unknown role or
    setting, a value ``load_config`` refuses, a variable that overrides it, a file layout this
    cannot edit). Nothing is written when it raises."""
    require(actor, ACTION)
    env = os.environ if env is None else env
    path = Path(path)
    _check_changes(changes)
    try:
        return _save_locked(path, role, changes, base_hash, env)
    except OSError as exc:  # the folder or file cannot be written (permissions, a full disk)
        raise LlmConfigError(f"cannot write {path}: {exc.strerror or exc}; nothing was saved",
                             "check that the folder exists and is writable by the workbench, "
                             "or point WORKBENCH_CONFIG at a file that is") from None


def _save_locked(path: Path, role: str, changes: Mapping[str, Any], base_hash: str,
                 env: Mapping[str, str]) -> LlmConfig:
    with _locked(path):
        current = read_settings_file(path)
        if current.content_hash != base_hash:
            raise StaleSettings(
                f"{path} changed since these settings were read (another admin saved, or it "
                "was edited by hand); nothing was saved",
                "reload the settings, check them and make your change again",
            )
        where = str(path)
        before = config_from_text(current.text, where, env)  # a broken file stays the user's
        before.role(role)  # an unknown role: LlmConfigError naming the roles there are
        if not changes:
            return before
        new_text = edit_role_table(current.text, role, changes)
        _check_layout(current.text, new_text, role, changes, where)
        config = config_from_text(new_text, where, env)
        _check_overrides(config, role, changes, env, where)
        _write_atomically(path, new_text)
    return config


def parse_setting(assignment: str) -> tuple[str, Any]:
    """``"temperature=0.2"`` -> ``("temperature", 0.2)``: text from a command line, typed as
    the :data:`EDITABLE` setting it names (numbers as numbers, so the file holds ``0.2``, not
    ``"0.2"``). Raises LlmConfigError naming the setting."""
    key, sep, text = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise LlmConfigError(f"{assignment!r} is not SETTING=VALUE",
                             "write it like temperature=0.2 or api_base=http://gpu-box:8000/v1")
    _check_changes({key: ""})  # an unknown setting or an API key: refused by name
    kind = str(ROLE_FIELDS[key].type)
    text = text.strip()
    try:
        if kind.startswith("int"):
            return key, int(text)
        if kind.startswith("float"):
            return key, float(text)
    except ValueError:
        raise LlmConfigError(f"{key}={text!r} is not a number",
                             f"give {key} a {'whole ' if kind.startswith('int') else ''}number"
                             ) from None
    return key, text


def edit_role_table(text: str, role: str, changes: Mapping[str, Any]) -> str:
    """``text`` with ``key = value`` for each change in the ``[roles.<role>]`` table (see the
    module docstring for what is kept). Does not validate; :func:`save_role_settings` does."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    header = re.compile(rf"^\s*\[\s*roles\s*\.\s*(\"?){re.escape(role)}\1\s*\]\s*(#.*)?$")
    start = next((i for i, line in enumerate(lines) if header.match(line.rstrip("\n"))), None)
    if start is None:
        name = role if re.fullmatch(r"[A-Za-z0-9_-]+", role) else _toml_string(role)
        block = [f"{key} = {_toml_value(value)}\n" for key, value in changes.items()]
        gap = ["\n"] if lines and lines[-1].strip() else []
        return "".join([*lines, *gap, f"[roles.{name}]\n", *block])
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])),
               len(lines))
    last_setting = start
    pending = dict(changes)
    for i in range(start + 1, end):
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            last_setting = i  # also the closing line of a multi-line array: add after it
        match = re.match(r"^\s*([A-Za-z0-9_-]+)\s*=", lines[i])
        if not match:
            continue
        key = match.group(1)
        if key in pending:
            lines[i] = f"{key} = {_toml_value(pending.pop(key))}\n"
    added = [f"{key} = {_toml_value(value)}\n" for key, value in pending.items()]
    lines[last_setting + 1:last_setting + 1] = added
    return "".join(lines)


def _check_changes(changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        if key == "api_key" or key.endswith("_api_key"):
            raise LlmConfigError(
                f"'{key}' looks like an API key; keys are never written to workbench.toml",
                "put the key in the environment or .streamlit/secrets.toml and name that "
                "variable with api_key_env (in workbench.toml, by hand)",
            )
        if key not in EDITABLE:
            raise LlmConfigError(f"'{key}' cannot be changed here",
                                 f"the Settings page changes {', '.join(EDITABLE)}; edit "
                                 "workbench.toml by hand for the others")
        if isinstance(value, float) and not math.isfinite(value):
            raise LlmConfigError(f"{key} = {value} is not a finite number",
                                 f"give {key} a finite value")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no file can hold it
                raise LlmConfigError(f"{key} holds a character that is not valid text",
                                     f"retype {key}") from None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise LlmConfigError(f"{key} = {value!r} is not text or a number",
                                 f"give {key} a value like the one workbench.toml.example shows")
    base = changes.get("api_base")
    if isinstance(base, str) and base.strip():
        if MASK in base:  # the form's masked address, edited rather than retyped
            raise LlmConfigError(
                f"api_base {base.strip()!r} holds the masked part ({MASK}) of the address shown",
                "type the whole address (without credentials)",
            )
        if has_secret(base.strip()) or has_secret(_decoded(base.strip())):
            # http://user:KEY@host or ?api-key=KEY, also percent-encoded (?%6Bey=KEY)
            raise LlmConfigError(
                "api_base holds credentials (user:password@host, or a key or token "
                "parameter); keys are never written to workbench.toml",
                "give the address without them and the key through api_key_env",
            )
        if not _ADDRESS.match(base.strip()):
            raise LlmConfigError(
                f"api_base {base.strip()!r} is not a whole address (no scheme://)",
                "give the scheme and host, e.g. http://127.0.0.1:8000/v1",
            )


# scheme://host...: what litellm and httpx call; "localhost:8000/v1" would be taken for a
# scheme "localhost" (or a relative path) and fail only at the first request.
_ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#]+(?:[/?#]\S*)?\Z")


def _decoded(url: str) -> str:
    """``url`` with its percent-encoding undone, again until it stops changing (a server
    decodes ``%256B`` to ``%6B``, a proxy then to ``k``), so a check sees the names the
    server will see."""
    for _ in range(5):
        plain = unquote(url)
        if plain == url:
            break
        url = plain
    return url


def _check_layout(old_text: str, new_text: str, role: str, changes: Mapping[str, Any],
                  where: str) -> None:
    """The edited text changes the role's requested keys and nothing else."""
    layout_error = LlmConfigError(
        f"{where}: could not change [roles.{role}] in this file's layout (the role is "
        "written as an inline table or with dotted keys?); nothing was saved",
        f"edit {where} by hand, or write the role as a [roles.{role}] table",
    )
    old = tomllib.loads(old_text)
    try:
        new = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        raise layout_error from None
    old_role = dict(old.get("roles", {}).get(role, {}))
    new_roles = dict(new.get("roles", {}))
    new_role = new_roles.pop(role, {})
    expected = {**old_role, **changes}
    rest_same = ({k: v for k, v in new.items() if k != "roles"}
                 == {k: v for k, v in old.items() if k != "roles"}
                 and new_roles == {k: v for k, v in old.get("roles", {}).items() if k != role})
    if not rest_same or not _same(new_role, expected):
        raise layout_error


def _check_overrides(config: LlmConfig, role: str, changes: Mapping[str, Any],
                     env: Mapping[str, str], where: str) -> None:
    """Every change takes effect: no WORKBENCH_* variable overrides it."""
    effective = config.role(role)
    for key, value in changes.items():
        # "" for api_base means the provider's default endpoint, as load_config reads it.
        expected = None if key == "api_base" and isinstance(value, str) and not value else value
        if _same(getattr(effective, key), expected):
            continue
        var = next((n for n in overriding_names(role, key) if n in env), None)
        if var is None:  # pragma: no cover - load_config gave another value for no reason
            raise LlmConfigError(f"{where}: {key} would be {getattr(effective, key)!r}, not "
                                 f"{value!r}; nothing was saved", "edit the file by hand")
        raise LlmConfigError(
            f"{var}={env[var]!r} in the environment overrides {key} of role '{role}', so "
            "saving it in workbench.toml would change nothing; nothing was saved",
            f"unset {var} where the workbench is started, or change the variable instead",
        )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-12)
    return a == b


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, float):
        return repr(value)  # shortest round-trip form; TOML reads 0.2, 1e-05, 300.0
    return str(int(value))


def _toml_string(text: str) -> str:
    # Every escape JSON writes (\" \\ \b \f \n \r \t \uXXXX) means the same in a TOML basic
    # string; only DEL, which JSON leaves raw and TOML refuses, needs one more.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise saves of ``path`` across processes (the check and the replace are one step)."""
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)  # keep the file's permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
