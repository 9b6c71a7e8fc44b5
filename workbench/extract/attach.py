"""Use an already running ``workbench model serve`` for the embedded roles.

Pointing a role at that server through ``WORKBENCH_<ROLE>_MODEL=openai/<alias>`` works, but
changes the model name in every request key, so responses recorded that way do not replay
under the default configuration. :class:`AttachedEmbedded` sends embedded-role requests to
the given server and leaves the request (and so its key) exactly as the in-process embedded
server would get it. It also avoids starting a second llama.cpp server on a small machine.

Stop-gap until the gateway can attach to a running embedded server by itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from workbench.llm import LlmConfig, RoleConfig
from workbench.llm.transport import LiteLLMTransport, RawResponse
from workbench.llm.weights import MODEL_ALIAS


class AttachedEmbedded:
    """A gateway transport: embedded roles go to ``api_base`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, config: LlmConfig, api_base: str) -> None:
        self.api_base = api_base.rstrip("/")
        if not self.api_base.endswith("/v1"):
            self.api_base += "/v1"
        self._live = LiteLLMTransport(config)

    def _route(self, role: RoleConfig) -> RoleConfig:
        if not role.is_embedded:
            return role
        return dataclasses.replace(role, model=f"openai/{MODEL_ALIAS}", api_base=self.api_base)

    def endpoint(self, role: RoleConfig) -> str:
        return self._live.endpoint(self._route(role))

    def send(self, request: dict[str, Any], role: RoleConfig, *, key: str) -> RawResponse:
        return self._live.send(request, self._route(role), key=key)


def attached_gateway(api_base: str, recordings: str | None = None, config: LlmConfig | None = None):
    """A Gateway whose embedded roles use the server at ``api_base``; with ``recordings``
    every exchange is also appended to that ``.jsonl`` file (record mode)."""
    from workbench.llm import Gateway, Recorder, load_config

    config = config or load_config()
    transport = AttachedEmbedded(config, api_base)
    recorder = Recorder(recordings) if recordings else None
    return Gateway(config, recorder=recorder, transport=transport)
