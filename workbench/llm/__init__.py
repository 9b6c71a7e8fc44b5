"""The model gateway: every model call of the product goes through here.

    from workbench.llm import Gateway, load_config
    gw = Gateway(config=load_config())            # or Gateway.from_env()
    res = gw.complete_json(role="judge", messages=[...], schema={...}, schema_name="verdict",
                           step="judge:case-17", validate=None, use_cache=True)
    res.data, res.text, res.usage                 # checked dict, raw text, Usage
    res = await gw.acomplete_json(...)            # bounded by the role's concurrency
    gw.usage_log                                  # every call's Usage

Stages take a ``ModelGateway`` (``protocol.py``): the members of ``Gateway`` they call.

Roles and endpoints come from ``workbench.toml`` / ``WORKBENCH_*`` variables (see
``workbench.toml.example``); the default model is the embedded one (``embedded.py``).
This package imports neither litellm nor xllamacpp until a call needs them.
"""

from workbench.llm.cache import (
    CachedResponse,
    MemoryResponseCache,
    ResponseCache,
    canonical_json,
    request_key,
)
from workbench.llm.config import (
    EMBEDDED,
    ROLE_NAMES,
    EmbeddedConfig,
    LlmConfig,
    RoleConfig,
    api_key_source,
    load_config,
    resolve_api_key,
)
from workbench.llm.errors import (
    EmbeddedModelUnavailable,
    LlmConfigError,
    MissingRecording,
    ModelCallError,
)
from workbench.llm.gateway import CallResult, Gateway
from workbench.llm.protocol import ModelGateway
from workbench.llm.recording import Recorder, Replayer, transport_from_env
from workbench.llm.usage import Usage, UsageTotals, summarize

__all__ = [
    "EMBEDDED",
    "ROLE_NAMES",
    "CachedResponse",
    "CallResult",
    "EmbeddedConfig",
    "EmbeddedModelUnavailable",
    "Gateway",
    "LlmConfig",
    "LlmConfigError",
    "MemoryResponseCache",
    "MissingRecording",
    "ModelCallError",
    "ModelGateway",
    "Recorder",
    "Replayer",
    "ResponseCache",
    "RoleConfig",
    "Usage",
    "UsageTotals",
    "api_key_source",
    "canonical_json",
    "load_config",
    "request_key",
    "resolve_api_key",
    "summarize",
    "transport_from_env",
]
