"""A judge for browser tests that store a Replay re-run: an OpenAI-compatible test server
(``workbench.llm.fake_server``, no model behind it) in this process, and the environment
that points the app server's judge role at it. The app server makes real HTTP calls
through litellm and its gateway; only the verdict is scripted."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from workbench.llm.fake_server import FakeChatServer, reply, role_env

COMPLIANT = {"violation": False, "violated_rules": [], "evidence": [], "reason": "No rule is broken."}


@contextlib.contextmanager
def scripted_judge(verdict: dict | None = None) -> Iterator[tuple[FakeChatServer, dict[str, str]]]:
    """``(server, env)``: pass ``env`` to the app server (live calls, not recordings)."""
    with FakeChatServer(default=reply(verdict or COMPLIANT, prompt_tokens=900,
                                      completion_tokens=40)) as srv:
        yield srv, {**role_env(srv.api_base, role="judge"), "WORKBENCH_LLM_MODE": "live"}
