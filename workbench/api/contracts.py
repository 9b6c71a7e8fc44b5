"""``POST /v1/contracts/{name}/check``: an agent runtime asks before each tool call "given
this trajectory so far, may I call X now, and what is missing?" and gets the skill
contract's answer (``workbench.contracts.guard.check_call``) with the contracts paper's
feedback text. A blocked call is appended to the contract check log as the API's service
identity; the Contracts page lists them.

Contracts are the ``*.yaml`` files of ``WORKBENCH_CONTRACTS`` (a folder; default
``.workbench/contracts``), served by their ``name``; the log is ``WORKBENCH_CONTRACT_LOG``
(default ``.workbench/contract_checks.jsonl``): each record keeps a digest of the call's
arguments, not the arguments, and the file rotates (``ContractCheckLog``), so a client cannot
grow it without bound. The route sits behind the app's gate (token, body cap) like every
other, and like the audit it is rate-limited (:class:`CheckLimit`): at most ``[api]
concurrency + queue`` checks at once and ``[api] contract_rate`` a second (bursts of twice
that); one more is answered 429 with ``Retry-After`` at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from workbench.api.body import StrictJsonRoute, shorten_message
from workbench.contracts.actions import Action
from workbench.contracts.contract import Contract
from workbench.contracts.guard import ContractCheckLog, check_call
from workbench.contracts.trajectories import TrajectoryFormatError
from workbench.identity.roles import Actor

CONTRACTS_ENV = "WORKBENCH_CONTRACTS"
DEFAULT_CONTRACTS = Path(".workbench") / "contracts"


class ProposedCall(BaseModel):
    name: str = Field(description="the tool the agent wants to call")
    arguments: dict[str, Any] = Field(default_factory=dict)
    with_message: bool = Field(False, description="sent in one turn with a message to the user")
    parallel: int = Field(1, ge=1, description="tool calls in the agent's turn")


class CheckRequest(BaseModel):
    trajectory: list[dict[str, Any]] = Field(
        default_factory=list, description="the run so far as OpenAI chat messages (tool calls "
        "and tool results included)")
    call: ProposedCall
    session: str = ""


class CheckResponse(BaseModel):
    allowed: bool
    contract: str
    phase: str = Field(description="the contract phase the run is in")
    reason: str = Field(description="why the call is blocked; empty when allowed")
    next_action: str | None = Field(description="one admissible action from here")
    missing_phases: list[str] = Field(description="required phases not done yet")
    feedback: str = Field(description="the text to show the agent (the contracts paper's feedback)")
    recorded: bool = Field(description="the blocked call was kept in the contract check log")


class ContractGuard:
    """The contracts the API serves, and where blocked calls go."""

    def __init__(self, contracts: dict[str, Contract], log: ContractCheckLog | None = None):
        self.contracts, self.log = contracts, log

    @classmethod
    def from_env(cls) -> ContractGuard:
        """Every readable contract of ``WORKBENCH_CONTRACTS``; a file that is not a valid
        contract is left out (``workbench contract check FILE`` says why)."""
        from workbench.contracts import load_contract
        from workbench.errors import WorkbenchError

        folder = Path(os.environ.get(CONTRACTS_ENV) or DEFAULT_CONTRACTS)
        contracts: dict[str, Contract] = {}
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            try:
                contract = load_contract(path)
            except WorkbenchError:
                continue
            contracts.setdefault(contract.name, contract)
        return cls(contracts, ContractCheckLog())


class CheckLimit:
    """Admission of contract checks: at most ``capacity`` held at once and ``rate`` a second
    (a token bucket holding ``2 * rate``). The event loop is one thread: plain counters are
    exact."""

    def __init__(self, capacity: int, rate: float):
        self.capacity, self.held = capacity, 0
        self.rate, self.burst = rate, max(1.0, 2 * rate)
        self.tokens, self._at = self.burst, time.monotonic()

    def refusal(self) -> str | None:
        """Why a check is refused now (None: admitted; the caller counts it held)."""
        if self.held >= self.capacity:
            return f"{self.held} contract checks are running"
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now
        if self.tokens < 1:
            return f"more than {self.rate:g} contract checks a second"
        self.tokens -= 1
        return None


def contract_routes(guard: ContractGuard, authorised: Callable[..., None], actor: Actor,
                    limit: CheckLimit | None = None) -> APIRouter:
    router = APIRouter(route_class=StrictJsonRoute)  # bodies read as the app reads them
    limit = limit or CheckLimit(10, 20.0)

    @router.post("/v1/contracts/{name}/check", response_model=CheckResponse,
                 dependencies=[Depends(authorised)])
    async def check(name: str, request: CheckRequest) -> Any:
        why = limit.refusal()
        if why is not None:
            return JSONResponse({"error": "busy", "message": f"too many contract checks: {why}",
                                 "hint": "retry after 1 s, or raise [api] contract_rate / "
                                 "concurrency / queue"}, 429, headers={"Retry-After": "1"})
        limit.held += 1
        try:
            return await _answer(name, request)
        finally:
            limit.held -= 1

    async def _answer(name: str, request: CheckRequest) -> Any:
        contract = guard.contracts.get(name)
        if contract is None:
            served = ", ".join(sorted(guard.contracts)) or "none"
            return JSONResponse({"error": "not_found",
                                 "message": shorten_message(f"no contract named {name!r}"),
                                 "hint": f"served contracts: {served} (the *.yaml files of "
                                 f"{CONTRACTS_ENV})"}, 404)
        call = Action.tool(request.call.name, request.call.arguments,
                           parallel=request.call.parallel, with_message=request.call.with_message)
        try:
            answer = await run_in_threadpool(check_call, contract, request.trajectory, call,
                                             session=request.session)
        except TrajectoryFormatError as exc:
            return JSONResponse({"error": "bad_request", "message": shorten_message(str(exc)),
                                 "hint": "send the run so far as chat messages"}, 422)
        recorded = False
        if not answer.allowed and guard.log is not None:
            await run_in_threadpool(guard.log.record, answer, actor=actor)
            recorded = True
        return {"allowed": answer.allowed, "contract": answer.contract, "phase": answer.phase,
                "reason": answer.reason, "next_action": answer.next_action,
                "missing_phases": list(answer.missing_phases), "feedback": answer.feedback,
                "recorded": recorded}

    return router
