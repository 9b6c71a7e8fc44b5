"""Which model each role uses, in words, and where each embedded model runs: for Settings.

The Settings page shows, per role, the model it calls (the embedded 1.5B or 0.5B by name, or
the litellm model string) and, per embedded model some role uses, whether it is reached
through a running ``workbench model serve``, runs in this process, or has not started.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.llm.config import LlmConfig, RoleConfig, attached_url_of, url_field
from workbench.llm.redact import redact_url
from workbench.llm.weights import DEFAULT_MODEL, embedded_model


def role_model_title(role: RoleConfig) -> str:
    """``Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), embedded`` for an embedded role, else the
    model string as configured."""
    served = role.embedded_model
    return f"{served.title}, embedded" if served is not None else role.model


def role_endpoint(config: LlmConfig, role: RoleConfig) -> str:
    """Where the role's calls go: its attached `workbench model serve`, else its endpoint
    (credentials in an address masked: this is shown)."""
    return redact_url(attached_url_of(config, role)) or role.endpoint


@dataclass(frozen=True)
class EmbeddedStatus:
    model: str  # the embedded model's name (workbench.llm.weights)
    title: str
    roles: tuple[str, ...]  # the roles that use it
    text: str  # one sentence: where it runs


def embedded_status(config: LlmConfig, running: dict[str, object | None]) -> list[EmbeddedStatus]:
    """One entry per embedded model a role uses (the default model when none does);
    ``running``: model name -> its in-process server (``embedded.current_embedded_server``)
    or None."""
    users: dict[str, list[str]] = {}
    for role in config.roles.values():
        if role.embedded_name is not None:
            users.setdefault(role.embedded_name, []).append(role.name)
    out = []
    emb = config.embedded
    for name in users or {DEFAULT_MODEL: []}:
        spec = embedded_model(name)
        attached = emb.attached_url_for(name)
        server = running.get(name)
        info = getattr(server, "info", None)
        if attached:
            field = url_field(name)
            flag = "" if name == DEFAULT_MODEL else f" --model {name}"
            text = (f"the running `workbench model serve{flag}` at {redact_url(attached)} "
                    f"([embedded].{field} / WORKBENCH_EMBEDDED_{field.upper()}); none is started "
                    "in this process")
        elif info is not None:
            text = (f"running at {info.url}/v1, {info.slots} slots x {info.slot_ctx} tokens, "
                    f"{info.threads} threads")
        else:
            text = (f"not started (starts on first use; {emb.parallel} slots x {emb.slot_ctx} "
                    f"tokens, {emb.n_threads} threads)")
        out.append(EmbeddedStatus(name, spec.title, tuple(users.get(name, [])), text))
    return out
