"""The model gateway as the product's stages see it: the seam between them and
:class:`~workbench.llm.gateway.Gateway`.

The audit (keywords, judges, the graph baselines' indexing), extraction, annotation and the
API service take a ``ModelGateway``: what they call on a gateway and nothing else. The real
:class:`Gateway` satisfies it structurally (``tests/test_gateway_protocol.py`` checks the
members and their signatures), and so may a test double::

    def judge_whole(gateway: ModelGateway, ...):
        res = gateway.complete_json(role=ModelRole.JUDGE, messages=..., schema=...)

The gateway's own tools (``llm.check``: ``mode``, ``with_config``, ``endpoint``) and its
async door (``acomplete_json``) stay on the class: no stage calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from workbench.llm.config import LlmConfig, RoleConfig
    from workbench.llm.gateway import CallResult
    from workbench.llm.structured import Validator
    from workbench.llm.usage import Usage


@runtime_checkable
class ModelGateway(Protocol):
    """Calls models for roles (``workbench.vocabulary.ModelRole``, or a role the
    configuration adds). ``isinstance(x, ModelGateway)`` checks the members are there, not
    their signatures."""

    @property
    def config(self) -> LlmConfig:
        """The roles' settings: a stage reads a role's limits (``config.role(name)``:
        ``max_tokens``, ``concurrency``, ``context_window``) and the embedded server's."""
        ...

    @property
    def usage_log(self) -> list[Usage]:
        """Every call's :class:`Usage` so far, in order (extraction reports its own slice)."""
        ...

    def complete_json(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        schema: Mapping[str, Any],
        schema_name: str = "answer",
        step: str = "",
        validate: Validator | None = None,
        use_cache: bool = True,
        *,
        logprobs: int | None = None,
        sample: tuple[float, int] | None = None,
        max_tokens: int | None = None,
    ) -> CallResult:
        """A JSON object matching ``schema`` (checked, one repair); raises ModelCallError."""
        ...

    def complete_text(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        step: str = "",
        validate: Callable[[str], Any] | None = None,
        use_cache: bool = True,
    ) -> CallResult:
        """Free text (``data`` is None); raises ModelCallError."""
        ...

    def build_request(
        self,
        role: RoleConfig,
        messages: Sequence[Mapping[str, Any]],
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The request as keyed, cached and recorded (extraction labels its model by it)."""
        ...

    def close(self) -> None:
        """Stop the gateway's worker threads (its holder calls it when done)."""
        ...
