"""The judge's context window, and fitting a case into it.

A judge request holds the prompt skeleton, the conversation, the state, the reply, the
policy context and room for the answer. :func:`judge_window` finds how many tokens that is
(configuration, the embedded server's slot, litellm's model information); :func:`fit_case`
says how many are left for the policy (the soft ``target_tokens`` of the context) and, when
the conversation itself leaves too little, drops the oldest turns — keeping the reply, the
state and the most recent turns, telling the judge, and recording it in the trace.

Our counts are cl100k tokens; the served model's tokenizer differs by a few percent, so
only ``1 - TOKENIZER_SLACK`` of the window is planned with.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from workbench.audit.cases import AuditCase, Turn
from workbench.audit.judge import ContextUnit, judge_messages, rule_messages
from workbench.audit.trace import WindowFit
from workbench.errors import WorkbenchError
from workbench.tokens import count_tokens

# Qwen2.5's tokenizer counted 1.4% more tokens than cl100k on policy text (3,041 for 3,000,
# bench/embedded_context.py); JSON state and non-English text can differ more, hence 10%.
TOKENIZER_SLACK = 0.10
CHAT_MARKUP = 16  # role markers and separators a chat template adds around two messages
# When the conversation must be cut, it leaves the policy at least this share of the window,
# so that parts do not shrink to single rules just to keep old turns.
MIN_POLICY_SHARE = 0.25


@dataclass(frozen=True)
class JudgeWindow:
    tokens: int  # prompt + answer of one request
    source: str  # where the figure comes from, for the trace and the Settings page
    answer_tokens: int = 512  # room kept for the answer: the judge role's max_tokens


class WindowExceeded(WorkbenchError):
    """One item of the context, or the reply and state alone, cannot fit the judge's window.

    ``kind`` is the trace error kind; the message names the sizes and the fix; ``fit`` is
    the window arithmetic, for the trace."""

    kind = "WindowExceeded"

    def __init__(self, message: str, fit: WindowFit):
        super().__init__(message)
        self.fit = fit


def judge_window(config: Any, role: str = "judge") -> JudgeWindow | None:
    """The context window of ``role``'s model; None when nothing says.

    Order: ``[roles.<role>] context_window``; for ``embedded``, the running server's slot
    (an attached ``workbench model serve`` is asked for its ``/props``), else the
    configured ``ctx_size / parallel``; otherwise litellm's ``max_input_tokens`` for the
    model string.
    """
    rc = config.role(role)
    answer = rc.max_tokens
    if rc.context_window:
        return JudgeWindow(rc.context_window, f"[roles.{role}] context_window", answer)
    if rc.is_embedded:
        from workbench.llm.config import attached_url_of

        emb = config.embedded
        if attached := attached_url_of(config, rc):
            slot = _served_slot(attached)
            if slot:
                return JudgeWindow(slot, f"slot of the server at {attached}", answer)
            return None
        from workbench.llm.embedded import current_embedded_server

        server = current_embedded_server(rc.embedded_name)
        if server is not None and server.info is not None and server.info.slot_ctx:
            return JudgeWindow(server.info.slot_ctx, "embedded server slot (running)", answer)
        return JudgeWindow(
            emb.slot_ctx, f"embedded slot: ctx_size {emb.ctx_size} / parallel {emb.parallel}",
            answer,
        )
    found = _litellm_window(rc.model)
    return JudgeWindow(found, f"litellm model info for {rc.model}", answer) if found else None


@lru_cache(maxsize=16)
def _litellm_window(model: str) -> int | None:
    try:
        import litellm

        info = litellm.get_model_info(model)
    except Exception:  # unknown to litellm (a local server's name): the window is unknown
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if isinstance(value, int | float) and value > 0 else None


@lru_cache(maxsize=8)
def _served_slot(api_base: str) -> int | None:
    root = api_base.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=3) as resp:
            props = json.loads(resp.read().decode() or "{}")
        return int((props.get("default_generation_settings") or {}).get("n_ctx") or 0) or None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def planned(window: JudgeWindow) -> int:
    """The part of the window we plan with (the rest absorbs tokenizer differences)."""
    return int(window.tokens * (1.0 - TOKENIZER_SLACK))


def policy_target(case: AuditCase, window: JudgeWindow) -> int:
    """The soft token target of the policy context for ``case`` before any turn is cut:
    what the window leaves after the answer and the fixed prompt, but never less than
    ``MIN_POLICY_SHARE`` of it (a long conversation is cut down to that, see fit_case)."""
    left = planned(window) - window.answer_tokens - fixed_tokens(case)
    return max(left, int(planned(window) * MIN_POLICY_SHARE))


def fixed_tokens(case: AuditCase) -> int:
    """Prompt tokens besides the policy: the larger of the whole and per-rule skeletons
    with this case's conversation, state and reply."""
    whole = sum(count_tokens(m["content"]) for m in judge_messages(case, ""))
    rule = sum(count_tokens(m["content"]) for m in rule_messages(case, ContextUnit("", "")))
    return max(whole, rule) + CHAT_MARKUP


def fit_case(
    case: AuditCase,
    window: JudgeWindow,
    largest_unit: int,
    context_tokens: int,
    per_rule: bool = False,
) -> tuple[AuditCase, WindowFit]:
    """The case as the judge will see it, and how it fits.

    The policy needs at least its largest item (``largest_unit``, every part holds one);
    beyond that, up to ``MIN_POLICY_SHARE`` of the window (or the whole context, if smaller)
    is kept free for it before any turn is dropped. Turns go oldest first, replaced by a
    note that says how many were left out. Raises WindowExceeded when even the reply, the
    state and the largest item alone do not fit.
    """
    answer_tokens = window.answer_tokens
    room = planned(window) - answer_tokens
    bare = replace(case, context=[])
    bare_fixed = fixed_tokens(bare)
    if bare_fixed + largest_unit > room:
        fit = WindowFit(window.tokens, window.source, answer_tokens, bare_fixed, room - bare_fixed)
        raise WindowExceeded(
            f"the judge's context window is {window.tokens} tokens ({window.source}); with "
            f"{answer_tokens} kept for the answer and {bare_fixed} for the prompt, state and "
            f"reply, {max(room - bare_fixed, 0)} are left for the policy, but its largest "
            f"item alone renders to {largest_unit} tokens. Give the judge a larger window "
            "([embedded].ctx_size, or [roles.judge].context_window for a larger model), or "
            "use a strategy with smaller items (cdg)",
            fit,
        )
    need = largest_unit if per_rule else min(
        context_tokens, max(largest_unit, int(planned(window) * MIN_POLICY_SHARE))
    )
    fixed = fixed_tokens(case)
    fit = WindowFit(window.tokens, window.source, answer_tokens, fixed, room - fixed)
    lines = _history_items(case)
    if fixed + need <= room or not lines:
        return case, fit
    for dropped in range(1, len(lines) + 1):
        trimmed = _without_oldest(case, lines, dropped)
        fixed = fixed_tokens(trimmed)
        if fixed + need <= room:
            break
    tokens_dropped = sum(count_tokens(t.content) for t in lines[:dropped])
    if room - fixed < largest_unit:  # only the note about the cut turns is left, and too big
        raise WindowExceeded(
            f"the judge's context window is {window.tokens} tokens ({window.source}); even "
            f"without the {len(lines)} turns of the conversation only {room - fixed} are left "
            f"for the policy, and its largest item renders to {largest_unit} tokens. Give the "
            "judge a larger window ([embedded].ctx_size or [roles.judge].context_window)",
            replace(fit, fixed_tokens=fixed, target_tokens=room - fixed),
        )
    return trimmed, replace(
        fit, fixed_tokens=fixed, target_tokens=room - fixed, turns_total=len(lines),
        turns_dropped=dropped, tokens_dropped=tokens_dropped,
    )


def _history_items(case: AuditCase) -> list[Turn]:
    # A plain-text transcript is cut at line boundaries, its lines standing for turns.
    if isinstance(case.context, str):
        return [Turn("transcript", line) for line in case.context.splitlines() if line.strip()]
    return case.turns


def _without_oldest(case: AuditCase, items: list[Turn], dropped: int) -> AuditCase:
    note = (
        f"({dropped} earlier {'turn was' if dropped == 1 else 'turns were'} left out to fit "
        "the judge's context window)"
    )
    kept = items[dropped:]
    if isinstance(case.context, str):
        return replace(case, context="\n".join([note] + [t.content for t in kept]))
    return replace(case, context=[Turn("note", note), *kept])
