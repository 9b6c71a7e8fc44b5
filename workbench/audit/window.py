"""The judge's context window, and fitting a case into it.

A judge request holds the prompt skeleton, the conversation, the state, the reply, the
policy context and room for the answer. :func:`judge_window` finds how many tokens that is
(configuration, the embedded server's slot, litellm's model information); :func:`fit_case`
says how many are left for the policy (the judge's room, which caps the seeds' target) and, when
the conversation itself leaves too little, drops the oldest turns — keeping the reply, the
state and the most recent turns, telling the judge, and recording it in the trace.

Our counts are cl100k tokens; the served model's tokenizer differs by a few percent, so
only ``1 - TOKENIZER_SLACK`` of the window is planned with.
"""

from __future__ import annotations

import json
import threading
import urllib.request
import weakref
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from workbench.audit.cases import AuditCase, Turn
from workbench.audit.deadline import check_deadline
from workbench.audit.judge import ContextUnit, judge_messages, rule_messages
from workbench.audit.prompts import quote
from workbench.audit.trace import WindowFit
from workbench.errors import WorkbenchError
from workbench.llm.redact import redact_url
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import ErrorKind, ModelRole

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

    kind = ErrorKind.WINDOW_EXCEEDED

    def __init__(self, message: str, fit: WindowFit):
        super().__init__(message)
        self.fit = fit


def judge_window(config: Any, role: str = ModelRole.JUDGE) -> JudgeWindow | None:
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
                return JudgeWindow(slot, f"slot of the server at {redact_url(attached)}", answer)
            return None
        from workbench.llm.embedded import current_embedded_server

        server = current_embedded_server(rc.embedded_name)
        if server is not None and server.info is not None and server.info.slot_ctx:
            return JudgeWindow(server.info.slot_ctx, "embedded server slot (running)", answer)
        return JudgeWindow(
            emb.slot_ctx, f"one of {emb.parallel} parallel slots of the embedded model's "
                          f"{emb.ctx_size:,}-token context",
            answer,
        )
    found = _litellm_window(rc.model)
    return JudgeWindow(found, f"litellm model info for {rc.model}", answer) if found else None


def configured_window(role: str = ModelRole.JUDGE) -> JudgeWindow | None:
    """``role``'s window as the workbench settings give it (``load_config``, as every
    gateway of the command line and the app is built); None when unknown, or when the
    settings do not load: a bad configuration is reported by the gateway when a model is
    needed, not here."""
    from workbench.llm.config import load_config
    from workbench.llm.errors import LlmConfigError

    try:
        return judge_window(load_config(), role)
    except LlmConfigError:
        return None


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


def judge_room(case: AuditCase, window: JudgeWindow) -> int:
    """The judge's room for ``case`` before any turn is cut: what the window leaves for the
    policy after the answer and the fixed prompt, but never less than ``MIN_POLICY_SHARE``
    of it (a long conversation is cut down to that, see fit_case). It caps the seeds'
    target (``ContextOptions.judge_room``)."""
    floor = int(planned(window) * MIN_POLICY_SHARE)
    fixed = fixed_tokens_upto(case, planned(window) - window.answer_tokens - floor)
    return floor if fixed is None else max(planned(window) - window.answer_tokens - fixed, floor)


def fixed_tokens(case: AuditCase) -> int:
    """Prompt tokens besides the policy: the larger of the whole and per-rule skeletons
    with this case's conversation, state and reply."""
    whole = sum(count_tokens(m["content"]) for m in judge_messages(case, ""))
    rule = sum(count_tokens(m["content"]) for m in rule_messages(case, ContextUnit("", "")))
    return max(whole, rule) + CHAT_MARKUP


def fixed_tokens_upto(case: AuditCase, cap: int) -> int | None:
    """``fixed_tokens(case)`` when it is at most ``cap``, else None, without rendering a
    conversation far longer than the window: the turns are counted newest first, and once
    they alone pass ``cap`` the prompt with only those turns is counted exactly (older
    turns only add tokens: each quoted turn is its own line). The pipeline asks twice for
    the same case (the judge's room, then fitting): the counts are kept for the last case."""
    memo = _memo_for(case)
    if memo.at_least > cap:  # an earlier call found the prompt over a larger cap
        return None
    lines = _history_items(case)
    total = 0
    for i in range(len(lines) - 1, 0, -1):
        total += _newest_line_tokens(case, lines, len(lines) - 1 - i)
        if total > cap:
            if i not in memo.partial:  # both calls often stop at the same turn
                memo.partial[i] = fixed_tokens(_with_items(case, lines[i:]))
                memo.at_least = max(memo.at_least, memo.partial[i])
            if memo.partial[i] > cap:
                return None
            break
    if memo.fixed is None:
        memo.fixed = fixed_tokens(case)
    return memo.fixed if memo.fixed <= cap else None


class _Memo(threading.local):
    case: weakref.ref | None = None  # weak: a long conversation is not kept alive by it
    fixed: int | None = None
    line_tokens: list[int]
    partial: dict[int, int]  # i -> fixed_tokens of the case with only its turns from i on
    at_least: int = 0  # the case's fixed_tokens is at least this (the largest partial)


_memo = _Memo()


def _newest_line_tokens(case: AuditCase, lines: list[Turn], k: int) -> int:
    """The tokens of the ``k``-th newest line of ``case`` (0: the newest), counted once per
    case however often the judge's room and the fitting ask."""
    memo = _memo_for(case)
    while len(memo.line_tokens) <= k:
        memo.line_tokens.append(_line_tokens(case, lines[len(lines) - 1 - len(memo.line_tokens)]))
    return memo.line_tokens[k]


def _memo_for(case: AuditCase) -> _Memo:
    # One case per thread at a time (the runner's workers): identity, not equality, so a
    # changed copy of the case is counted afresh.
    if _memo.case is None or _memo.case() is not case:
        _memo.case, _memo.fixed, _memo.line_tokens, _memo.partial = weakref.ref(case), None, [], {}
        _memo.at_least = 0
    return _memo


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
    fixed = fixed_tokens_upto(case, room - need)
    lines = _history_items(case)
    if fixed is not None or not lines:
        fixed = fixed_tokens(case) if fixed is None else fixed
        return case, WindowFit(window.tokens, window.source, answer_tokens, fixed, room - fixed)
    dropped, fixed = _fewest_dropped(case, lines, room - need)
    fit = WindowFit(window.tokens, window.source, answer_tokens, fixed, room - fixed)
    tokens_dropped = sum(count_tokens(t.content) for t in lines[:dropped])
    if room - fixed < largest_unit:  # only the note about the cut turns is left, and too big
        raise WindowExceeded(
            f"the judge's context window is {window.tokens} tokens ({window.source}); even "
            f"without the {len(lines)} turns of the conversation only {room - fixed} are left "
            f"for the policy, and its largest item renders to {largest_unit} tokens. Give the "
            "judge a larger window ([embedded].ctx_size or [roles.judge].context_window)",
            fit,
        )
    return _without_oldest(case, lines, dropped), replace(
        fit, turns_total=len(lines), turns_dropped=dropped, tokens_dropped=tokens_dropped,
    )


def _fewest_dropped(case: AuditCase, lines: list[Turn], limit: int) -> tuple[int, int]:
    """The fewest oldest turns to drop so that the prompt without the policy is at most
    ``limit`` tokens (all of them when nothing is enough), and that prompt's tokens.

    Rendering and counting the whole prompt once per candidate made this quadratic (600
    turns took 20 s). Instead the turns are counted one by one, newest first, until they
    pass the limit: that estimates the cut. Exact counts then confirm it, galloping from the
    estimate to the boundary; they are of prompts that (nearly) fit the window, so they cost
    the window, not the conversation. The prompt shrinks as turns go (up to a token of the
    note's digits), so this is the first cut that fits, as dropping one turn at a time
    found it.
    """
    n = len(lines)
    exact: dict[int, int] = {}

    def fits(dropped: int) -> bool:
        if dropped not in exact:
            check_deadline("fitting the conversation into the judge's window")
            exact[dropped] = fixed_tokens(_without_oldest(case, lines, dropped))
        return exact[dropped] <= limit

    fits(n)  # the prompt with every turn dropped: the note alone
    kept, guess = exact[n], n
    for i in range(n - 1, 0, -1):  # newest first: keep turns while the estimate fits
        kept += _newest_line_tokens(case, lines, n - 1 - i)
        if kept > limit:
            break
        guess = i
    if fits(guess):  # gallop towards fewer dropped turns (lo fails, hi fits)
        hi, step = guess, 1
        lo = hi - step
        while lo >= 1 and fits(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, 0)  # dropping none is known not to fit
    else:  # gallop towards more dropped turns
        lo, step = guess, 1
        hi = min(lo + step, n)
        while hi < n and not fits(hi):
            lo, step = hi, step * 2
            hi = min(lo + step, n)
        if not fits(hi):  # even the note alone is over: drop everything
            return n, exact[n]
    while hi - lo > 1:  # bisect
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi, exact[hi]


def _line_tokens(case: AuditCase, turn: Turn) -> int:
    """A turn's tokens as the conversation block shows it (one quoted line per turn; a
    transcript line inside the one quoted transcript)."""
    if isinstance(case.context, str):  # inside the transcript's string, plus its "\n"
        return count_tokens(quote(turn.content)[1:-1]) + 1
    return count_tokens(quote({"role": turn.role, "content": turn.content}))


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
    return _with_items(case, [Turn("note", note), *items[dropped:]])


def _with_items(case: AuditCase, items: list[Turn]) -> AuditCase:
    if isinstance(case.context, str):
        return replace(case, context="\n".join(t.content for t in items))
    return replace(case, context=items)
