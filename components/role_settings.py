"""The Settings page's form that changes one model role's settings in workbench.toml.

Admins (and single-user mode) get the form; anyone else one line saying who may change the
settings. The write is ``workbench.llm.config_file.save_role_settings``, which checks the role
again, validates, and refuses a stale save: the page keeps the hash of the file as this
session first saw it and passes it as the base, so a save over someone else's newer change
(another admin, an edit by hand) is refused with "reload" instead of overwriting it.

After a save the page reruns: ``load_config`` reads the new file and
``pages._state.model_gateway(config)`` keys its one cached gateway on the configuration's
fingerprint, so the next model call uses a gateway built from the new settings.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import streamlit as st

from components import identity, queue_nav
from components.errors import show_error
from components.safe import md
from workbench.errors import WorkbenchError
from workbench.llm import LlmConfig, RoleConfig
from workbench.llm.config_file import (
    ACTION,
    EDITABLE,
    read_settings_file,
    save_role_settings,
    settings_file_path,
)
from workbench.llm.redact import redact_url
from workbench.settings import overriding_names

BASE_KEY = "settings_base_hash"  # the file's hash as this session read it
FLASH_KEY = "settings_flash"

LABELS = {
    "model": "Model",
    "api_base": "API base URL",
    "temperature": "Temperature",
    "max_tokens": "Max tokens",
    "concurrency": "Concurrency",
    "timeout": "Timeout (s)",
}
HELP = {
    "model": "'embedded' (the local model) or a litellm model string, e.g. openai/gpt-4o-mini "
             "or openai/Qwen2.5-7B-Instruct for an OpenAI-compatible server.",
    "api_base": "The server's base URL including /v1, e.g. http://gpu-box:8000/v1. Empty: the "
                "provider's default endpoint. Never put a key here.",
    "temperature": "Sampling temperature, 0..2 (0.01 in the first paper, appendix B).",
    "max_tokens": "The longest answer allowed, in tokens.",
    "concurrency": "Calls of this role that may run at once; keep it at or below the "
                   "server's parallel slots.",
    "timeout": "Seconds to wait for one answer before it counts as failed and is retried.",
}


def role_settings_editor(config: LlmConfig, env: Mapping[str, str] | None = None) -> None:
    """Draw the change form for admins, or the one line that says who may change settings."""
    env = os.environ if env is None else env
    if not identity.permitted(ACTION):
        return
    path = settings_file_path(env)
    try:
        snapshot = read_settings_file(path)
    except WorkbenchError as exc:
        show_error(exc, "The settings file cannot be read: ")
        return
    base = st.session_state.setdefault(BASE_KEY, snapshot.content_hash)
    queue_nav.show_flash(FLASH_KEY)
    if base != snapshot.content_hash:
        st.warning(md(f"{path} changed since you opened these settings (another admin saved, "
                      "or it was edited by hand). Reload to see and change the current ones."))
        st.button("Reload settings", key="settings_reload", on_click=_reload)
    role = config.role(st.selectbox("Role to change", list(config.roles), key="settings_edit_role"))
    overrides = overriding_variables(role.name, env)
    st.caption(md(f"Saved to {path} "
                  f"({'exists' if snapshot.exists else 'created by the first save'}). "
                  "API keys are never written there."))
    # The base hash in the keys: after a save or a reload the fields start from the file.
    suffix = f"{role.name}_{base[:12]}"
    values: dict[str, Any] = {}
    with st.form(f"settings_form_{suffix}", border=True):
        for key in EDITABLE:
            values[key] = _field(key, role, overrides.get(key), f"settings_{key}_{suffix}")
        submitted = st.form_submit_button("Save settings", type="primary")
    if overrides:
        st.caption(md("Set by the environment, so not changeable here: "
                      + ", ".join(f"{k} ({v})" for k, v in overrides.items())))
    if not submitted:
        return
    changes = {k: v for k, v in values.items()
               if k not in overrides and not _same(v, _shown(role, k))}
    if not changes:
        st.info("Nothing changed: the form holds the current settings.")
        return
    try:
        save_role_settings(path, role.name, changes, actor=identity.actor(), base_hash=base,
                           env=env)
    except WorkbenchError as exc:
        show_error(exc, "Not saved: ")
        return
    st.session_state.pop(BASE_KEY, None)  # the next run reads the file just written
    queue_nav.leave_flash(FLASH_KEY, "success", f"Saved {role.name}: "
                          + ", ".join(f"{k} = {v!r}" for k, v in changes.items()))
    st.rerun()


def overriding_variables(role: str, env: Mapping[str, str]) -> dict[str, str]:
    """Editable settings a ``WORKBENCH_*`` variable sets for ``role`` (setting -> variable):
    the file's value would not apply, so the form shows them disabled."""
    found: dict[str, str] = {}
    for key in EDITABLE:
        for var in overriding_names(role, key):
            if var in env:
                found[key] = var
                break
    return found


def _reload() -> None:
    st.session_state.pop(BASE_KEY, None)


def _shown(role: RoleConfig, key: str) -> Any:
    """The value the form shows; an address with credentials masked (left as shown, the
    saved one stays; to change it, type the whole new address)."""
    value = getattr(role, key)
    if key == "api_base":
        return "" if value is None else redact_url(value)
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    return a == b


def _field(key: str, role: RoleConfig, override: str | None, widget_key: str) -> Any:
    label = LABELS[key]
    disabled = override is not None
    help_text = HELP[key] + (f" Set by {override} in the environment." if override else "")
    value = _shown(role, key)
    if key in ("model", "api_base"):
        return st.text_input(label, value=value, key=widget_key, disabled=disabled,
                             help=help_text).strip()
    if key in ("max_tokens", "concurrency"):
        return int(st.number_input(label, min_value=1, value=int(value), step=1, key=widget_key,
                                   disabled=disabled, help=help_text))
    if key == "temperature":
        chosen = st.number_input(label, min_value=0.0, max_value=2.0, value=float(value),
                                 step=0.01, format="%.2f", key=widget_key, disabled=disabled,
                                 help=help_text)
        return round(float(chosen), 4)  # a stepped float: 0.30000000000000004 -> 0.3
    # min 0: a role's value is never below a widget's minimum (Streamlit would raise); a 0
    # typed here gets load_config's "timeout must be positive" from the save.
    return float(st.number_input(label, min_value=0.0, value=float(value), step=10.0,
                                 format="%.2f", key=widget_key, disabled=disabled,
                                 help=help_text))
