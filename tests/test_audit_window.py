"""Fitting audits into the judge's context window (``workbench.audit.window`` / ``parts``).

The judge is a fake OpenAI-compatible server that, like llama.cpp, refuses any request
whose messages plus ``max_tokens`` exceed its window; every request goes through the real
gateway, so a request the planning gets wrong fails the test as a ContextWindowExceeded.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.audit.cases import Turn, load_cases
from workbench.audit.judge import ContextUnit
from workbench.audit.parts import closure_groups, combine, plan_parts, render_part
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions
from workbench.audit.trace import AuditTrace, JudgedPart, Verdict
from workbench.audit.window import JudgeWindow, judge_window
from workbench.graph import PolicyIndex
from workbench.llm import Gateway, load_config
from workbench.llm.config import EmbeddedConfig, LlmConfig
from workbench.llm.errors import LlmConfigError
from workbench.llm.fake_server import FakeChatServer, reply, request_tokens, role_env, window_limited

# The keyword-seeded full closure of the merchant case, rendered in full: larger than the small
# window below. (Scored seeding fits its closure to the window by itself; these tests are about
# what happens when a closure cannot fit whole.)
WHOLE_CLOSURE = ContextOptions(seeding="keywords", render="full")

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
WINDOW = 1400  # the merchant closure (~770 tokens) plus its prompt (~600) does not fit
ANSWER = 64
BROKEN = "C032"  # the gold violated rule of merchant-delay-violation


def fake_judge(body: dict):
    """Violation iff the broken rule is in the policy the request shows."""
    user = body["messages"][-1]["content"]
    shown = f"[{BROKEN}]" in user
    if body["response_format"]["json_schema"]["name"] == "rule_check":
        return reply({"applies": shown, "violated": shown})
    if shown:
        return reply({"violation": True, "violated_rules": [BROKEN],
                      "evidence": [], "reason": f"breaks [{BROKEN}]"})
    return reply({"violation": False, "violated_rules": [], "evidence": [], "reason": "no item applies"})


@pytest.fixture(scope="module")
def index():
    return AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))


@pytest.fixture(scope="module")
def case():
    return next(c for c in load_cases(FIX / "merchant_cases.jsonl") if c.id == "merchant-delay-violation")


@pytest.fixture
def server():
    with FakeChatServer(default=window_limited(WINDOW, fake_judge)) as srv:
        yield srv


def gateway_for(srv, **settings) -> Gateway:
    env = role_env(srv.api_base, max_tokens=ANSWER, retries=0, **settings)
    return Gateway(load_config(env=env), sleep=lambda _s: None)


def assert_all_fitted(srv: FakeChatServer) -> None:
    assert srv.requests, "no request reached the judge"
    assert max(request_tokens(b) for b in srv.requests) <= WINDOW


def test_a_refused_whole_context_is_judged_in_halves(server, index, case):
    # The defect of issue 21: told a wrong window, the pipeline sends the whole closure in one
    # request and the server refuses it (context_overflow); it then judges halves, once.
    opts = AuditOptions(window=JudgeWindow(100_000, "wrong on purpose", ANSWER), context=WHOLE_CLOSURE)
    trace = audit_case(case, index, "cdg", gateway_for(server), opts)
    refused = [c for c in trace.usage if c.error]
    assert [c.error for c in refused] == ["context_overflow"]
    assert request_tokens(server.requests[0]) > WINDOW
    assert trace.error is None and trace.verdict.violated_rules == [BROKEN]
    assert trace.window.split == "grouped" and len(trace.parts) >= 2
    assert all(p.tokens <= trace.context_tokens // 2 for p in trace.parts)
    assert max(request_tokens(b) for b in server.requests[1:]) <= WINDOW


def test_an_unknown_window_is_learned_from_the_refusal(server, index, case):
    trace = audit_case(case, index, "cdg", gateway_for(server),  # litellm knows no fake-model
                       AuditOptions(context=WHOLE_CLOSURE))
    assert trace.error is None and trace.verdict.violation
    assert trace.window.window == 0 and "refused" in trace.window.source and trace.parts


def test_whole_mode_judges_an_oversized_closure_in_closure_ordered_groups(server, index, case):
    opts = AuditOptions(keep_prompts=True, context=WHOLE_CLOSURE)
    trace = audit_case(case, index, "cdg", gateway_for(server, context_window=WINDOW), opts)
    assert trace.error is None, trace.error
    assert_all_fitted(server)
    assert [p["step"] for p in trace.prompts] == [f"judge:part{p.index}" for p in trace.parts]
    assert trace.window.window == WINDOW and "context_window" in trace.window.source
    assert trace.context_tokens > trace.window.judge_room  # it really did not fit whole
    assert trace.window.split == "grouped" and len(trace.parts) > 1
    assert trace.verdict.violation and trace.verdict.violated_rules == [BROKEN]
    assert f"[{BROKEN}]" in trace.verdict.reason
    # Every rule was judged, and each together with its prerequisites (or alone when its
    # group was too big for one part).
    judged = {u for p in trace.parts for u in p.units}
    assert judged == set(trace.closure_ids)
    graph = index.skill("merchant-order-refund").graph
    for p in trace.parts:
        assert p.tokens <= trace.window.judge_room
        if len(p.units) > 1:
            for rid in p.units:
                assert set(graph.closure([rid])) <= set(p.units), (rid, p.units)
    breaking = [p for p in trace.parts if p.violation]
    assert breaking and all(BROKEN in p.units for p in breaking)
    assert len([c for c in trace.usage if c.step.startswith("judge:part")]) == len(trace.parts)


def test_whole_mode_can_fall_back_to_per_rule_parts(server, index, case):
    opts = AuditOptions(split="per-rule", context=WHOLE_CLOSURE)
    trace = audit_case(case, index, "cdg", gateway_for(server, context_window=WINDOW), opts)
    assert trace.error is None, trace.error
    assert_all_fitted(server)
    assert trace.window.split == "per-rule"
    assert [p.units for p in trace.parts] == [[rid] for rid in trace.closure_ids]
    assert trace.verdict.violation and trace.verdict.violated_rules == [BROKEN]
    assert [p.index for p in trace.parts if p.violation] == [trace.closure_ids.index(BROKEN) + 1]


def test_per_rule_mode_fits_each_question(server, index, case):
    opts = AuditOptions(judge_mode="per-rule", context=WHOLE_CLOSURE)
    trace = audit_case(case, index, "cdg", gateway_for(server, context_window=WINDOW), opts)
    assert trace.error is None, trace.error
    assert_all_fitted(server)
    assert len(server.requests) == len(trace.closure_ids) and not trace.parts
    assert trace.verdict.violated_rules == [BROKEN]


def test_a_closure_that_fits_is_judged_whole(index, case):
    with FakeChatServer(default=window_limited(4000, fake_judge)) as srv:
        trace = audit_case(case, index, "cdg", gateway_for(srv, context_window=4000))
    assert trace.error is None and not trace.parts and trace.window.split == ""
    assert len(srv.requests) == 1 and trace.verdict.violated_rules == [BROKEN]


def test_a_long_conversation_keeps_the_reply_state_and_latest_turns(server, index, case):
    chatter = [Turn("user" if i % 2 else "assistant", f"Turn {i}: " + "words " * 60) for i in range(30)]
    long_case = replace(case, context=chatter + list(case.turns))
    trace = audit_case(long_case, index, "cdg", gateway_for(server, context_window=WINDOW))
    assert trace.error is None, trace.error
    assert_all_fitted(server)
    w = trace.window
    assert w.turns_total == 33 and 0 < w.turns_dropped < 33 and w.tokens_dropped > 0
    sent = server.requests[0]["messages"][-1]["content"]
    assert f"{w.turns_dropped} earlier turns were left out" in sent  # the judge is told
    assert case.turns[-1].content in sent and "Turn 0:" not in sent  # newest kept, oldest cut
    assert case.model_response in sent and "W-20931" in sent  # reply and state kept
    assert trace.verdict is not None


def test_an_item_too_big_for_any_part_is_a_clear_error(index, case):
    with FakeChatServer(default=window_limited(WINDOW, fake_judge)) as srv:
        trace = audit_case(case, index, "raw", gateway_for(srv, context_window=WINDOW))
        assert not srv.requests
    assert trace.verdict is None and trace.error.kind == "WindowExceeded"
    assert "ctx_size" in trace.error.message and str(WINDOW) in trace.error.message
    assert trace.window.window == WINDOW


def test_window_records_survive_the_trace_round_trip(server, index, case):
    trace = audit_case(case, index, "cdg", gateway_for(server, context_window=WINDOW),
                       AuditOptions(context=WHOLE_CLOSURE))
    again = AuditTrace.from_dict(json.loads(json.dumps(trace.to_dict())))
    assert again == trace and isinstance(again.parts[0], JudgedPart)


# -- the window's sources --------------------------------------------------------------------


def test_window_comes_from_config_then_embedded_slot_then_litellm():
    base = load_config(env={})
    assert judge_window(base.with_role("judge", context_window=9000)).tokens == 9000
    emb = LlmConfig(base.roles, EmbeddedConfig(ctx_size=32768, parallel=2))
    w = judge_window(emb)
    assert (w.tokens, w.answer_tokens) == (16384, 512) and "32,768-token context" in w.source
    hosted = base.with_role("judge", model="gpt-4o-mini")
    assert judge_window(hosted).tokens >= 100_000  # litellm's bundled model information
    assert judge_window(base.with_role("judge", model="openai/some-local-name")) is None


def test_a_context_window_smaller_than_the_answer_is_refused():
    with pytest.raises(LlmConfigError, match="context_window 800"):
        load_config(env={"WORKBENCH_JUDGE_CONTEXT_WINDOW": "800"})


# -- parts, by hand ----------------------------------------------------------------------------


class _Graph:
    """A requires B, B requires C; D stands alone."""

    requires = {"A": ["B"], "B": ["C"], "C": [], "D": []}

    def closure(self, unit: ContextUnit) -> list[str]:
        out, todo = [], [unit.id]
        while todo:
            rid = todo.pop(0)
            if rid not in out:
                out.append(rid)
                todo += self.requires[rid]
        return out


UNITS = [ContextUnit(r, f"[{r}] (required)\n  Then: " + "x " * 40, "s") for r in "DACB"]


def test_closure_groups_keep_each_rule_with_its_prerequisites():
    groups = closure_groups(UNITS, _Graph().closure)
    assert [[u.id for u in g] for g in groups] == [["D"], ["A", "B", "C"]]  # C, B covered by A's
    assert [[u.id for u in g] for g in closure_groups(UNITS, None)] == [["D"], ["A"], ["C"], ["B"]]


def test_plan_parts_packs_groups_and_splits_only_what_does_not_fit():
    one = max(len(render_part([u], True)) for u in UNITS)  # chars bound tokens from above
    roomy = plan_parts(UNITS, 10_000, "grouped", _Graph().closure)
    assert [[u.id for u in p] for p in roomy] == [["D", "A", "B", "C"]]
    from workbench.llm.tokens import count_tokens

    three = count_tokens(render_part(UNITS[1:], True))
    tight = plan_parts(UNITS, three, "grouped", _Graph().closure)
    assert [[u.id for u in p] for p in tight] == [["D"], ["A", "B", "C"]]
    small = plan_parts(UNITS, three - 1, "grouped", _Graph().closure)
    assert [[u.id for u in p] for p in small] == [["D"], ["A"], ["B"], ["C"]]
    assert len(plan_parts(UNITS, one, "per-rule")) == 4
    with pytest.raises(ValueError, match="alone is over"):
        plan_parts(UNITS, 5, "grouped")


def test_combine_cites_every_violating_part():
    v = [
        Verdict(False, "fine", []),
        Verdict(True, "breaks [A]", ["A"]),
        Verdict(True, "breaks [B] and [A]", ["B", "A"]),
    ]
    parts = [JudgedPart(i, "whole", [], 10) for i in (1, 2, 3)]
    out = combine(v, parts)
    assert out.violation and out.violated_rules == ["A", "B"]
    assert out.reason == "Part 2/3: breaks [A] Part 3/3: breaks [B] and [A]"
    assert not combine(v[:1], parts[:1]).violation


def test_cli_no_judge_run_shows_the_window_and_which_cases_need_parts(tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_JUDGE_CONTEXT_WINDOW", str(WINDOW))
    monkeypatch.setenv("WORKBENCH_JUDGE_MAX_TOKENS", str(ANSWER))
    out = tmp_path / "traces.jsonl"
    args = ["audit", "--index", str(FIX / "merchant_index.json"), "--cases",
            str(FIX / "merchant_cases.jsonl"), "--no-judge", "--out", str(out)]
    assert main([*args, "--strategy", "cdg", "--limit", "1", "--seeding", "keywords",
                 "--render", "full"]) == 0
    err = capsys.readouterr().err
    assert f"judge window: {WINDOW} tokens ([roles.judge] context_window)" in err
    assert "in grouped parts" in err
    trace = AuditTrace.from_dict(json.loads(out.read_text().splitlines()[0]))
    assert trace.window.split == "grouped" and trace.verdict is None and not trace.parts


def test_a_plain_text_transcript_is_cut_at_line_boundaries(case):
    from workbench.audit.window import fit_case

    lines = [f"line {i}: " + "talk " * 50 for i in range(40)]
    text_case = replace(case, context="\n".join(lines))
    kept, fit = fit_case(text_case, JudgeWindow(WINDOW, "test", ANSWER), 100, 700)
    assert isinstance(kept.context, str) and fit.turns_total == 40 and fit.turns_dropped > 0
    first, *rest = kept.context.splitlines()
    assert first == f"({fit.turns_dropped} earlier turns were left out to fit the judge's context window)"
    assert rest == lines[fit.turns_dropped:]  # whole lines, the newest kept
    # The policy keeps a quarter of the planned window (0.25 * 0.9 * 1400 = 315 tokens), not
    # the whole 700-token context: long contexts are split into parts rather than cutting turns.
    assert fit.judge_room == int(WINDOW * 0.9) - ANSWER - fit.fixed_tokens >= 315


def test_the_window_caps_the_seed_target_but_never_raises_it(index, case):
    # A 16K-token window must not grow the small default closure to fill it (seeding aims at
    # min(default target, what the window leaves)); a small window still shrinks it.
    assert ContextOptions().effective_seed_target() == 1600
    assert ContextOptions(judge_room=12_000).effective_seed_target() == 1600
    assert ContextOptions(judge_room=500).effective_seed_target() == 500
    assert ContextOptions(seed_target=3000, judge_room=2000).effective_seed_target() == 2000
    big = AuditOptions(judge_mode="none", window=JudgeWindow(16_384, "slot", ANSWER))
    small = AuditOptions(judge_mode="none", window=JudgeWindow(1_400, "small", ANSWER))
    wide = audit_case(case, index, "cdg", None, big)
    narrow = audit_case(case, index, "cdg", None, small)
    assert wide.context_tokens <= 1600 * 1.1
    assert narrow.context_tokens < wide.context_tokens
