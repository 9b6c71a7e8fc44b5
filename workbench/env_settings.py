"""Numeric settings read from ``WORKBENCH_*`` environment variables, with one error form.

A bad value (not a number, or below the minimum) is a setup error: it stops the command
with the variable's name and what it accepts, instead of falling back silently.
"""

from __future__ import annotations

import os

from workbench.errors import WorkbenchError


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
