"""Settings as typed values: a ``workbench.toml`` table checked against the known settings,
``WORKBENCH_*`` variables read for them, and each raw value coerced to its field's type, with
errors that name the setting (or the variable) and what it should be."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from workbench.llm.errors import LlmConfigError
from workbench.llm.redact import redact_text


def table(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise LlmConfigError(f"{where}: '{key}' must be a table, got {type(value).__name__}")
    return value


def checked(table: Mapping[str, Any], allowed: Mapping[str, Any], where: str) -> dict[str, Any]:
    for key in table:
        if key == "api_key" or key.endswith("_api_key"):
            raise LlmConfigError(
                f"{where}: '{key}' looks like an API key; keys never go in workbench.toml. "
                'Set api_key_env = "NAME" there and put NAME in the environment or in '
                ".streamlit/secrets.toml"
            )
        if key not in allowed:
            raise LlmConfigError(f"{where}: unknown setting '{key}'; known settings: {', '.join(allowed)}")
    return dict(table)


def from_env(env: Mapping[str, str], prefix: str, allowed: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _EnvValue(var, env[var]) for name in allowed if (var := prefix + name.upper()) in env}


@dataclass(frozen=True)
class _EnvValue:
    var: str
    raw: str


def typed_values(cls: type, settings: dict[str, Any], where: str) -> dict[str, Any]:
    """``settings`` (file values or :class:`_EnvValue`) coerced to the types of ``cls``'s fields."""
    types = {f.name: f.type for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in settings.items():
        origin = f"{value.var}={value.raw!r}" if isinstance(value, _EnvValue) else f"{key}"
        raw = value.raw if isinstance(value, _EnvValue) else value
        try:
            values[key] = _coerce(raw, str(types[key]))
        except (TypeError, ValueError) as exc:
            raise LlmConfigError(redact_text(f"{where}: bad value for {origin}: {exc}")) from None
    return values


def _coerce(value: Any, type_name: str) -> Any:
    optional = "None" in type_name
    if optional and (value is None or value == ""):
        return None
    if type_name.startswith("tuple"):
        # A TOML array, or comma-separated text from an environment variable.
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise TypeError(f"expected a list of text, got {value!r}")
        return tuple(i.strip() for i in items if i.strip())
    if type_name.startswith("str"):
        if not isinstance(value, str):
            raise TypeError(f"expected text, got {value!r}")
        return value
    if type_name.startswith("int"):
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise TypeError(f"expected a whole number, got {value!r}")
        return int(value)
    if type_name.startswith("float"):
        if isinstance(value, bool):
            raise TypeError(f"expected a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {value!r}")
        return number
    return value
