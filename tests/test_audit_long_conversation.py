"""Long conversations: fitting the judge's window in (near) linear work, and the per-case
time limit on the audit's own work (issue 36).

The fitting is checked against its specification — the fewest oldest turns whose removal
makes the prompt fit, found by dropping one turn at a time and counting the whole prompt
each time (the quadratic loop it replaced) — on conversations of random turn lengths, and
its work is counted: the number of prompts it renders and their size.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.audit import deadline, window
from workbench.audit.cases import AuditCase, Turn, load_cases
from workbench.audit.deadline import CaseTimeLimit, Deadline, case_deadline, check_deadline
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.runner import run_audit
from workbench.audit.window import MIN_POLICY_SHARE, JudgeWindow, fit_case, planned
from workbench.graph import PolicyIndex
from workbench.llm.tokens import count_tokens

FIX = Path(__file__).resolve().parent.parent / "fixtures"
WORDS = "refund order customer the a delivery late credit agent policy ok yes no".split()


def random_case(rnd: random.Random, turns: int, transcript: bool = False) -> AuditCase:
    contents = [" ".join(rnd.choice(WORDS) for _ in range(rnd.choice([1, 3, 8, 40, 120])))
                for _ in range(turns)]
    if transcript:
        lines = [f"{'user' if i % 2 else 'agent'}: {c}" for i, c in enumerate(contents)]
        context: str | list[Turn] = "\n".join(lines)
    else:
        context = [Turn("user" if i % 2 else "assistant", c) for i, c in enumerate(contents)]
    return AuditCase(id="long", session="s", context=context, background={"order": "A-1"},
                     model_response="I issued a credit of $5 for the late delivery.")


def reference_fit(case: AuditCase, win: JudgeWindow, largest: int, context_tokens: int):
    """The specification (the old loop): drop 1, 2, ... oldest turns, counting the whole
    prompt each time, until the prompt leaves room for what the policy needs."""
    room = planned(win) - win.answer_tokens
    need = min(context_tokens, max(largest, int(planned(win) * MIN_POLICY_SHARE)))
    lines = window._history_items(case)
    if window.fixed_tokens(case) + need <= room:
        return 0, window.fixed_tokens(case), 0
    for dropped in range(1, len(lines) + 1):
        fixed = window.fixed_tokens(window._without_oldest(case, lines, dropped))
        if fixed + need <= room:
            break
    return dropped, fixed, sum(count_tokens(t.content) for t in lines[:dropped])


@pytest.mark.parametrize("transcript", [False, True])
def test_fit_drops_the_same_turns_as_dropping_one_at_a_time(transcript):
    rnd = random.Random(36 + transcript)
    for trial in range(12):
        case = random_case(rnd, rnd.randint(5, 90), transcript)
        win = JudgeWindow(rnd.choice([1500, 2500, 4000]), "test", 200)
        largest, context_tokens = rnd.randint(20, 200), rnd.randint(200, 900)
        want = reference_fit(case, win, largest, context_tokens)
        try:
            kept, fit = fit_case(replace(case), win, largest, context_tokens)
        except window.WindowExceeded as exc:  # the old loop then had dropped everything
            assert want[0] == len(window._history_items(case)), trial
            assert exc.fit.fixed_tokens == want[1]
            continue
        assert (fit.turns_dropped, fit.fixed_tokens, fit.tokens_dropped) == want, trial
        assert fit.fixed_tokens == window.fixed_tokens(kept)  # the trace counts what is sent
        assert fit.judge_room == planned(win) - win.answer_tokens - fit.fixed_tokens


def test_judge_room_is_unchanged_for_short_and_long_conversations():
    rnd = random.Random(7)
    win = JudgeWindow(4000, "test", 200)
    floor = int(planned(win) * MIN_POLICY_SHARE)
    for turns in (2, 10, 40, 400):
        case = random_case(rnd, turns)
        want = max(planned(win) - win.answer_tokens - window.fixed_tokens(case), floor)
        assert window.judge_room(replace(case), win) == want, turns


def test_fitting_a_long_conversation_renders_only_window_sized_prompts(monkeypatch):
    """Work, not time: the old loop rendered and counted the whole prompt once per dropped
    turn (3,000 turns: 3,000 prompts of up to the whole conversation)."""
    case = random_case(random.Random(1), 3000)
    win = JudgeWindow(4000, "test", 200)
    rendered: list[int] = []
    real = window.fixed_tokens

    def counting(c: AuditCase) -> int:
        rendered.append(len(c.turns))
        return real(c)

    monkeypatch.setattr(window, "fixed_tokens", counting)
    kept, fit = fit_case(case, win, 100, 800)
    assert fit.turns_dropped > 2900 and len(kept.turns) == 3000 - fit.turns_dropped + 1
    assert len(rendered) <= 12, rendered  # the bare case, the estimate, a few exact checks
    # No prompt rendered is more than a few times what is kept (never the whole 3,000 turns).
    assert max(rendered) <= 4 * len(kept.turns), rendered


def test_a_case_past_its_time_limit_ends_with_a_time_limit_error_and_keeps_its_trace(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(deadline, "_clock", lambda: now[0])
    index = AuditIndex(PolicyIndex.load(FIX / "demo" / "index.json"))
    case = load_cases(FIX / "demo" / "cases.jsonl")[0]
    real = window.fixed_tokens_upto

    def slow(c, cap):  # the judge's room is computed after keywords and routing
        now[0] += 500.0
        return real(c, cap)

    monkeypatch.setattr(window, "fixed_tokens_upto", slow)
    opts = AuditOptions(judge_mode="none", window=JudgeWindow(16384, "test", 512), time_limit_s=60)
    trace = audit_case(case, index, "cdg", None, opts)
    assert trace.error is not None and trace.error.kind == "TimeLimit"
    assert "time limit of 60 s" in trace.error.message and "--time-limit" in trace.error.message
    assert trace.skills  # what was done before the limit is kept
    # 0 turns the limit off: the same case then finishes.
    now[0] = 0.0
    trace = audit_case(case, index, "cdg", None, replace(opts, time_limit_s=0))
    assert trace.error is None and trace.window is not None


def test_a_batch_goes_on_past_a_case_over_its_time_limit(monkeypatch, tmp_path):
    now = [0.0]
    monkeypatch.setattr(deadline, "_clock", lambda: now[0])
    from workbench.audit import pipeline

    real = pipeline.lexical_keywords

    def keywords(case, index, limit):
        if case.id.endswith("-slow"):
            now[0] += 1000.0
        return real(case, index, limit)

    monkeypatch.setattr(pipeline, "lexical_keywords", keywords)
    index = AuditIndex(PolicyIndex.load(FIX / "demo" / "index.json"))
    cases = load_cases(FIX / "demo" / "cases.jsonl")[:3]
    cases[1] = replace(cases[1], id=cases[1].id + "-slow")
    out = tmp_path / "traces.jsonl"
    summary = run_audit(cases, index, "cdg", out, None,
                        AuditOptions(judge_mode="none", time_limit_s=30), concurrency=1)
    assert summary.done == 3 and summary.errors == {"TimeLimit": 1}


def test_model_time_does_not_count_against_the_limit(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(deadline, "_clock", lambda: now[0])
    model = [0.0]
    d = Deadline(10.0, lambda: model[0])
    now[0], model[0] = 300.0, 295.0  # 5 s of our own work beside 295 s of model calls
    d.check("judging")
    now[0] = 306.0
    with pytest.raises(CaseTimeLimit, match="11.0 s, stopped while judging"):
        d.check("judging")


def test_the_time_limit_setting(monkeypatch):
    from workbench.settings import SettingError

    monkeypatch.setenv("WORKBENCH_AUDIT_TIME_LIMIT", "2.5")
    assert deadline.time_limit(None) == 2.5 and deadline.time_limit(7) == 7.0
    monkeypatch.setenv("WORKBENCH_AUDIT_TIME_LIMIT", "soon")
    with pytest.raises(SettingError, match="WORKBENCH_AUDIT_TIME_LIMIT='soon'"):
        deadline.time_limit(None)
    monkeypatch.delenv("WORKBENCH_AUDIT_TIME_LIMIT")
    assert deadline.time_limit(None) == deadline.DEFAULT_TIME_LIMIT_S
    with case_deadline(0):
        check_deadline("anywhere")  # no limit: never raises


def test_a_negative_time_limit_is_refused():
    from workbench.settings import SettingError

    with pytest.raises(SettingError, match="0 \\(no limit\\) or a positive"):
        deadline.time_limit(-1)


def test_seed_ranking_reads_only_the_turns_whose_weight_counts(monkeypatch):
    """The ranking query of a long conversation is that of its newest turns: a turn weighing
    under a billionth of the newest is not stemmed (it was, for every turn of every case)."""
    from workbench.audit import rule_ranking
    from workbench.audit.rule_ranking import DEFAULT_WEIGHTS, NEGLIGIBLE_TURN_WEIGHT, case_query

    # Old turns carry words no newer turn has: read, they would enter the query.
    old = [Turn("user", f"ancient{i} warehouse{i}") for i in range(5_000)]
    new = [Turn("assistant" if i % 2 else "user", f"refund the late order {i}") for i in range(200)]
    case = AuditCase("c", "I refunded the late order.", context=old + new)
    read = max(i for i in range(1000) if DEFAULT_WEIGHTS.section_decay**i >= NEGLIGIBLE_TURN_WEIGHT) + 1
    assert 50 < read < 200  # the section bag reads ~93 turns back at its default decay
    short = replace(case, context=(old + new)[-read:])
    calls = []
    real = rule_ranking.stems
    monkeypatch.setattr(rule_ranking, "stems", lambda text: calls.append(text) or real(text))
    query = case_query(case, ["refund"])
    assert len(calls) == read + 4  # the turns once for both bags; the reply and keyword per bag
    assert query == case_query(short, ["refund"])
    assert not any(s.startswith("ancient") for s in query)
