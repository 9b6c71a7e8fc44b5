"""Skill contracts: procedural compliance of agent trajectories.

A contract (YAML, see ``workbench.contracts.spec``) lists a skill's phases, the actions each
admits, the allowed transitions, actions admissible anywhere, milestones and what verifies
them, the accepted termination condition and budgets. ``ContractRuntime.step`` accepts or
rejects each action with contract-state feedback, and can guard a live agent; ``replay``
audits recorded trajectories; ``summarize`` gives PCR, RF-PCR, outcome rate, hint rate,
mean credit and the PCR x outcome table; ``progress_reward`` turns the verified credit into
a per-trajectory training reward for the factorial study's arms; ``check_call`` answers an
agent runtime before each tool call (may I call X now, what is missing) and
``ContractCheckLog`` keeps the blocked calls as JSON Lines. Pure Python: no UI, no database.

The pieces of a contract (phases, rules, checks, milestones, transitions, budgets) are
``workbench.contracts.contract``'s; callers only ever needed ``Contract`` from here.
"""

from workbench.contracts.actions import Action
from workbench.contracts.contract import Contract
from workbench.contracts.guard import CallCheck, ContractCheckLog, check_call
from workbench.contracts.metrics import ContractSummary, PcrOutcomeTable, outcome_class, summarize
from workbench.contracts.replay import ReplayReport, Scorer, replay, replay_all
from workbench.contracts.results import ContractState, Feedback, StepResult, TerminationVerdict
from workbench.contracts.reward import (
    CONDITIONS,
    Condition,
    progress_reward,
    step_rewards,
    trajectory_return,
)
from workbench.contracts.runtime import ContractRuntime
from workbench.contracts.spec import (
    ContractError,
    ContractIssue,
    check_contract_text,
    load_contract,
    parse_contract,
)
from workbench.contracts.trajectories import (
    Trajectory,
    TrajectoryFormatError,
    TrajectoryStep,
    load_trajectories,
    parse_trajectories,
    read_trajectories,
    steps_from_messages,
)

__all__ = [
    "CONDITIONS",
    "Action",
    "CallCheck",
    "ContractCheckLog",
    "Contract",
    "ContractError",
    "ContractIssue",
    "ContractRuntime",
    "Condition",
    "ContractState",
    "ContractSummary",
    "Feedback",
    "PcrOutcomeTable",
    "ReplayReport",
    "Scorer",
    "StepResult",
    "TerminationVerdict",
    "Trajectory",
    "TrajectoryFormatError",
    "TrajectoryStep",
    "check_call",
    "check_contract_text",
    "load_contract",
    "load_trajectories",
    "outcome_class",
    "parse_contract",
    "parse_trajectories",
    "progress_reward",
    "read_trajectories",
    "replay",
    "replay_all",
    "step_rewards",
    "steps_from_messages",
    "summarize",
    "trajectory_return",
]
