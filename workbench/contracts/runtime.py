"""The contract runtime: feed it actions, it accepts or rejects each with feedback.

Usable as a live guard (check an action before executing it) or to audit a recorded
trajectory (``workbench.contracts.replay``)::

    runtime = ContractRuntime(contract)
    result = runtime.step(Action.tool("cancel_reservation", {"reservation_id": "ABC123"}))
    if not result.accepted:
        tell_the_agent(result.agent_message())     # do not execute the call
    else:
        runtime.observe(execute(...))               # the tool result verifies milestones
    verdict = runtime.finish()                      # accepted termination?

Rules, in the order the runtime applies them to an agent action:

1. Budgets: an action beyond ``budgets.turns`` (tool calls + assistant messages) or
   ``budgets.tool_calls`` is rejected and the run halts; every later agent action is
   rejected. A run whose budget ran out has not terminated: termination fails, whatever
   phases were done (the contracts paper: exhaustion without accepted termination is a failure).
2. Turn shape: too many tool calls in one turn, or a tool call sent with a message when the
   contract forbids it, is rejected. A tool missing from ``tools`` (when listed) is rejected.
3. Admission: the transitions out of the current phase are tried in the order written (a
   transition may lead back to the same phase); an action admitted by the target phase, with
   the transition's ``when`` and the rule's argument checks and ``requires`` met, moves there.
   Otherwise the current phase's own rules keep the phase; otherwise an ``anywhere`` rule
   accepts without a phase change; otherwise the action is rejected.
4. A rejected action changes neither phase nor milestones. When its feedback is shown to
   the agent it sets the recovery flag; with feedback withheld the flag stays off (the
   contracts paper, A.1: disabling feedback keeps it zero): an agent that was told nothing is not
   recovering from a correction, and its credit is never discounted.
5. Milestones: an accepted action matching a milestone's ``verified_by`` with a valid
   observation completes it (per key for keyed milestones). The first completion of each
   milestone earns its credit, times rho when it is completed by the recovery action: the
   first accepted agent action after rejection feedback. Any accepted agent action resets
   the flag (the contracts paper, section 3), also one that makes no progress (``think``): a
   milestone completed later earns full credit.
6. User turns are never rejected: they may move the phase (an explicit "yes") and otherwise
   change nothing. They do not count against budgets.
7. Accepted termination (``finish``): every required phase done (its ``done_when``
   milestones completed, or, without ``done_when``, an action admitted by one of its rules;
   merely starting there or passing user turns does not count) and, when ``final_phases``
   is given, the run ends in one of them.

Feedback names the current phase and one admissible next action, described from the
contract's rules; it never contains observation content (never the task's answer). It is
shown to the agent on each rejected action while the run is live (``feedback_shown``);
``ContractRuntime(feedback=False)`` withholds it (the factorial study's no-feedback arms):
rejections still stand and are still recorded, but the agent only hears that the action
was not executed (:meth:`StepResult.agent_message`), no action is a recovery and no credit
is discounted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

from workbench.contracts.actions import Action
from workbench.contracts.contract import (
    ActionRule,
    Contract,
    Evidence,
    Milestone,
    Requirement,
    Transition,
    arg_key,
)
from workbench.contracts.results import ContractState, Feedback, StepResult, TerminationVerdict


@dataclass
class _Decision:
    accepted: bool
    phase: str
    via: str
    progress: bool = False
    reason: str = ""
    hint: str | None = None
    exhausted: str | None = None


@dataclass
class _Pending:
    """The last accepted tool call, waiting for its observation to verify milestones."""

    index: int
    action: Action
    candidates: list[tuple[Milestone, Evidence]] = field(default_factory=list)
    recovery: bool = False  # the call was the recovery action: its milestones are discounted


class ContractRuntime:
    """Tracks one run of an agent against a ``Contract``; see the module docstring."""

    def __init__(self, contract: Contract, *, rho: float | None = None, feedback: bool = True) -> None:
        self.contract = contract
        self.feedback = feedback
        self.rho = contract.recovery_discount if rho is None else rho
        if not 0 < self.rho <= 1:
            raise ValueError(f"rho must be in (0, 1], got {self.rho}")
        self.phase = contract.initial
        self.completed: dict[str, set[str | None]] = {}
        self.entered: set[str] = set()
        self.recovering = False
        self.turns = 0
        self.tool_calls = 0
        self.halted: str | None = None
        self.rejected = 0
        self.hints = 0
        self.agent_steps = 0
        self.credit = 0.0
        self.history: list[StepResult] = []
        self._user_texts: list[str] = []
        self._pending: _Pending | None = None

    # -- public API ------------------------------------------------------------------------

    def check(self, action: Action) -> Feedback:
        """Would ``action`` be accepted now? Changes nothing (a dry run of ``step``)."""
        decision = self._budget_or_shape(action) or self._admit(action)
        return self._feedback(decision)

    def step(self, action: Action, observation: str | None = None) -> StepResult:
        """Apply one action (and its observation, when already known)."""
        self._pending = None
        index = len(self.history)
        before = self.phase
        if self.halted and not action.by_agent:
            # The run is over: later user turns are recorded but change nothing.
            result = StepResult(index, action, True, before, before, "halted",
                                Feedback(True, before, None), observation, halted=self.halted)
            self.history.append(result)
            return result
        decision = self._budget_or_shape(action) or self._admit(action)
        if action.by_agent:
            self.agent_steps += 1
            if decision.exhausted:
                self.halted = decision.exhausted
            elif decision.via != "halted":
                self.turns += 1
                self.tool_calls += action.kind == "tool"
        if not decision.accepted:
            # Feedback reaches the agent on a rejection while the run is live and feedback
            # is on; after a halt there is no agent to tell.
            shown = action.by_agent and self.feedback and decision.via != "halted"
            if action.by_agent:
                self.rejected += 1
                self.hints += shown
            # Only feedback the agent was shown makes its next action a recovery.
            self.recovering = self.recovering or shown
            result = StepResult(index, action, False, before, self.phase, decision.via,
                                self._feedback(decision), observation, halted=self.halted,
                                feedback_shown=shown)
            self.history.append(result)
            return result
        if action.kind == "user":
            self._user_texts.append(action.text)
        self.phase = decision.phase
        if decision.progress:  # admitted by one of the phase's own rules
            self.entered.add(decision.phase)
        # The first accepted agent action after shown rejection feedback is the recovery
        # action, whether or not it makes progress; it clears the flag, and only milestones
        # it completes (now or once its observation arrives) are discounted by rho.
        recovery = False
        if action.by_agent and self.recovering:
            recovery, self.recovering = True, False
        result = StepResult(index, action, True, before, self.phase, decision.via,
                            Feedback(True, self.phase, None), observation, recovery=recovery)
        self.history.append(result)
        candidates = self._milestone_candidates(action)
        now = self._completions([c for c in candidates if not c[1].observation.needs_observation],
                                action, None)
        later = [c for c in candidates if c[1].observation.needs_observation]
        self._verify(index, now, recovery)
        self._refresh_feedback(index)
        if later:
            self._pending = _Pending(index, action, later, recovery)
            if observation is not None:
                self.observe(observation)
        return self.history[index]

    def observe(self, observation: str | None) -> StepResult | None:
        """Attach the result of the last accepted tool call; verifies its milestones."""
        pending, self._pending = self._pending, None
        if pending is None or observation is None:
            last = self.history[-1] if self.history else None
            if last is not None and last.action.kind == "tool" and observation is not None \
                    and last.observation is None:
                self.history[-1] = replace(last, observation=observation)
            return self.history[-1] if self.history else None
        self.history[pending.index] = replace(self.history[pending.index], observation=observation)
        done = self._completions(pending.candidates, pending.action, observation)
        self._verify(pending.index, done, pending.recovery)
        self._refresh_feedback(pending.index)
        return self.history[pending.index]

    def finish(self) -> TerminationVerdict:
        """Judge termination on the current state: accepted or, if not, why."""
        missing = tuple(p for p in self.contract.required_phases if not self.phase_done(p))
        final_ok = not self.contract.final_phases or self.phase in self.contract.final_phases
        accepted = not missing and final_ok and not self.halted
        reasons = []
        if missing:
            reasons.append(f"required phase(s) not done: {', '.join(missing)}")
        if not final_ok:
            reasons.append(f"ended in phase '{self.phase}', not one of "
                           f"{', '.join(self.contract.final_phases)}")
        if self.halted and not accepted:
            reasons.insert(0, f"the {self.halted} budget ran out before accepted termination")
        return TerminationVerdict(accepted, self.phase, missing, self.halted, "; ".join(reasons))

    def phase_done(self, phase_id: str) -> bool:
        phase = self.contract.phase(phase_id)
        if phase.done_when:
            return all(self.completed.get(m) for m in phase.done_when)
        return phase_id in self.entered

    @property
    def state(self) -> ContractState:
        return ContractState(
            phase=self.phase,
            milestones={m: tuple(sorted(keys, key=str)) for m, keys in self.completed.items()},
            done_phases=tuple(p.id for p in self.contract.phases if self.phase_done(p.id)),
            recovering=self.recovering, turns=self.turns, tool_calls=self.tool_calls,
            halted=self.halted, rejected=self.rejected, agent_steps=self.agent_steps,
            credit=self.credit, hints=self.hints,
        )

    def suggest(self) -> str | None:
        """One admissible next action from the current state, in words."""
        for phase_id in self.contract.required_phases:
            if self.phase_done(phase_id):
                continue
            if phase_id == self.phase:
                missing = [m for m in self.contract.phase(phase_id).done_when
                           if not self.completed.get(m)]
                if missing:
                    return self.contract.milestone(missing[0]).how()
            else:
                hint = self._step_toward(phase_id)
                if hint:
                    return hint
        for transition in self.contract.transitions_from(self.phase):
            target = self.contract.phase(transition.target)
            if target.admits and not self._unmet(transition.when, None):
                return target.admits[0].description()
        own = self.contract.phase(self.phase).admits or self.contract.anywhere
        return own[0].description() if own else None

    # -- decisions ---------------------------------------------------------------------------

    def _budget_or_shape(self, action: Action) -> _Decision | None:
        if not action.by_agent:
            return None
        if self.halted:
            return _Decision(False, self.phase, "halted",
                             reason=f"the {self.halted} budget is exhausted; the run is over")
        budgets = self.contract.budgets
        over = None
        if budgets.turns is not None and self.turns + 1 > budgets.turns:
            over = ("turns", budgets.turns)
        elif action.kind == "tool" and budgets.tool_calls is not None \
                and self.tool_calls + 1 > budgets.tool_calls:
            over = ("tool_calls", budgets.tool_calls)
        if over:
            return _Decision(False, self.phase, "budget", exhausted=over[0],
                             reason=f"the {over[0]} budget ({over[1]}) is exhausted")
        if action.kind != "tool":
            return None
        shape = self.contract.turn_shape
        if shape.max_tool_calls is not None and action.parallel > shape.max_tool_calls:
            return _Decision(False, self.phase, "turn shape",
                             reason=f"{action.parallel} tool calls were sent in one turn; the "
                                    f"contract allows {shape.max_tool_calls} at a time",
                             hint="make one tool call, wait for its result, then continue")
        if not shape.message_with_tool_call and action.with_message:
            return _Decision(False, self.phase, "turn shape",
                             reason="a tool call was sent together with a message to the user",
                             hint="either call a tool or answer the user, not both in one turn")
        if self.contract.tools and action.name not in self.contract.tools:
            return _Decision(False, self.phase, "unknown tool",
                             reason=f"'{action.name}' is not one of the contract's tools")
        return None

    def _admit(self, action: Action) -> _Decision:
        blocked: list[tuple[str, str | None]] = []
        for transition in self.contract.transitions_from(self.phase):
            target = self.contract.phase(transition.target)
            rules = [r for r in target.admits if r.shape_matches(action)]
            if not rules:
                continue
            unmet = self._unmet(transition.when, action)
            if unmet:
                blocked.append((f"moving from '{self.phase}' to '{target.id}' needs "
                                f"{_words(unmet)}", self._how(unmet[0])))
                continue
            if self._first_satisfied(rules, action, blocked) is not None:
                return _Decision(True, target.id, f"{self.phase} -> {target.id}", progress=True)
        own = [r for r in self.contract.phase(self.phase).admits if r.shape_matches(action)]
        if self._first_satisfied(own, action, blocked) is not None:
            return _Decision(True, self.phase, f"in {self.phase}", progress=True)
        anywhere = [r for r in self.contract.anywhere if r.shape_matches(action)]
        if self._first_satisfied(anywhere, action, blocked) is not None:
            return _Decision(True, self.phase, "anywhere")
        if action.kind == "user":
            return _Decision(True, self.phase, "user turn")
        if blocked:
            reason, hint = blocked[0]
            return _Decision(False, self.phase, "rejected", reason=f"{_label(action)}: {reason}",
                             hint=hint)
        return self._not_admitted(action)

    def _first_satisfied(self, rules: list[ActionRule], action: Action,
                         blocked: list[tuple[str, str | None]]) -> ActionRule | None:
        """The first rule whose argument checks and ``requires`` hold; failures go to
        ``blocked`` as ``(reason, hint)`` so a rejection can say why."""
        for rule in rules:
            failures = rule.arg_failures(action, self._user_texts)
            if failures:
                blocked.append(("; ".join(failures), rule.description()))
                continue
            unmet = self._unmet(rule.requires, action)
            if unmet:
                blocked.append((f"it requires {_words(unmet)} first", self._how(unmet[0])))
                continue
            return rule
        return None

    def _not_admitted(self, action: Action) -> _Decision:
        elsewhere = self.contract.phases_admitting(action)
        # The shortest route to a phase admitting the action (the first such, on a tie).
        routes = (self._path(self.phase, phase_id) for phase_id in elsewhere)
        best = min((r for r in routes if r is not None), key=len, default=None)
        if best:
            route = " -> ".join([self.phase] + [t.target for t in best])
            return _Decision(False, self.phase, "rejected",
                             reason=f"{_label(action)} is admitted in phase '{best[-1].target}', "
                                    f"which is not reachable from '{self.phase}' in one step "
                                    f"(route: {route})",
                             hint=self._step_toward(best[-1].target))
        where = f"in phase '{self.phase}'"
        if elsewhere:
            where += f" (only in {', '.join(elsewhere)}, not reachable from here)"
        return _Decision(False, self.phase, "rejected",
                         reason=f"{_label(action)} is not admitted {where} nor anywhere",
                         hint=self.suggest())

    def _refresh_feedback(self, index: int) -> None:
        """Accepted steps suggest the next action from the state after their milestones."""
        step = self.history[index]
        self.history[index] = replace(step, feedback=Feedback(True, step.phase, self.suggest()))

    def _feedback(self, decision: _Decision) -> Feedback:
        if decision.accepted:
            return Feedback(True, decision.phase, self.suggest())
        if decision.via in ("budget", "halted"):  # the run is over: nothing is admissible
            return Feedback(False, self.phase, None, decision.reason)
        return Feedback(False, self.phase, decision.hint or self.suggest(), decision.reason)

    # -- milestones and guards ---------------------------------------------------------------

    def _milestone_candidates(self, action: Action) -> list[tuple[Milestone, Evidence]]:
        return [(milestone, evidence)
                for milestone in self.contract.milestones if milestone.in_phase in (None, self.phase)
                for evidence in milestone.evidence
                if evidence.rule.shape_matches(action)
                and not evidence.rule.arg_failures(action, self._user_texts)
                and (evidence.key_from_observation or evidence.key_of(action, None)[0])]

    def _completions(self, candidates: list[tuple[Milestone, Evidence]], action: Action,
                     observation: str | None) -> list[tuple[Milestone, str | None]]:
        """The ``(milestone, key)`` pairs the candidates verify with this observation."""
        out: list[tuple[Milestone, str | None]] = []
        for milestone, evidence in candidates:
            if not evidence.observation.accepts(observation, self.contract.error_pattern,
                                                self._user_texts):
                continue
            available, key = evidence.key_of(action, observation)
            if available and (milestone, key) not in out:
                out.append((milestone, key))
        return out

    def _verify(self, index: int, completions: list[tuple[Milestone, str | None]],
                recovery: bool) -> None:
        if not completions:
            return
        earned, names = 0.0, []
        for milestone, key in completions:
            keys = self.completed.setdefault(milestone.id, set())
            if not keys:
                earned += milestone.credit * (self.rho if recovery else 1.0)
            if key not in keys:
                names.append(f"{milestone.id}[{key}]" if key is not None else milestone.id)
            keys.add(key)
        self.credit += earned
        step = self.history[index]
        self.history[index] = replace(step, milestones=step.milestones + tuple(names),
                                      credit=step.credit + earned)

    def _unmet(self, reqs: tuple[Requirement, ...], action: Action | None) -> list[Requirement]:
        return [req for req in reqs
                if not (keys := self.completed.get(req.milestone))
                or (req.key_arg and action is not None and arg_key(action.args.get(req.key_arg)) not in keys)]

    def _how(self, req: Requirement) -> str:
        how = self.contract.milestone(req.milestone).how()
        return f"{how} (for this {req.key_arg})" if req.key_arg else how

    def _path(self, start: str, goal: str) -> list[Transition] | None:
        """Shortest route of transitions (guards ignored) from ``start`` to ``goal``."""
        if start == goal:
            return None
        queue: deque[tuple[str, list[Transition]]] = deque([(start, [])])
        seen = {start}
        while queue:
            here, route = queue.popleft()
            for transition in self.contract.transitions_from(here):
                if transition.target in seen:
                    continue
                nxt = route + [transition]
                if transition.target == goal:
                    return nxt
                seen.add(transition.target)
                queue.append((transition.target, nxt))
        return None

    def _step_toward(self, goal: str) -> str | None:
        path = self._path(self.phase, goal)
        if not path:
            return None
        first = path[0]
        unmet = self._unmet(first.when, None)
        if unmet:
            return self._how(unmet[0])
        admits = self.contract.phase(first.target).admits
        return admits[0].description() if admits else None


def _label(action: Action) -> str:
    if action.kind == "tool":
        return action.name
    return "an assistant message" if action.kind == "assistant" else "a user message"


def _words(reqs: list[Requirement]) -> str:
    names = [f"milestone '{r.milestone}' for this {r.key_arg}" if r.key_arg
             else f"milestone '{r.milestone}'" for r in reqs]
    return " and ".join(names)
