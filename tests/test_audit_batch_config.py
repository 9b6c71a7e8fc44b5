"""``AuditBatch``: what the command line and the Review page share about a batch run — the
judge's window worked out once, whether the model is needed, what is pending — and the seed
target that reaches every strategy (issue 33 items 2 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.audit import window as window_module
from workbench.audit.batch import AuditBatch
from workbench.audit.cases import load_cases
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions
from workbench.audit.sinks import JsonlFileSink
from workbench.audit.window import JudgeWindow
from workbench.graph import PolicyIndex

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
NO_JUDGE = AuditOptions(judge_mode="none")


@pytest.fixture(scope="module")
def index():
    return AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))


@pytest.fixture(scope="module")
def cases():
    return load_cases(FIX / "merchant_cases.jsonl")


def test_the_window_is_worked_out_once_and_also_without_a_judge(monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE_CONTEXT_WINDOW", "9000")
    calls = []
    real = window_module.judge_window
    monkeypatch.setattr(window_module, "judge_window", lambda *a: calls.append(a) or real(*a))
    batch = AuditBatch.configure("cdg", NO_JUDGE)
    assert batch.options.window == JudgeWindow(9000, "[roles.judge] context_window", 512)
    assert len(calls) == 1
    given = JudgeWindow(4000, "given", 256)
    assert AuditBatch.configure("cdg", AuditOptions(window=given)).options.window is given
    assert len(calls) == 1  # a window the caller gives is not looked up again


def test_a_configuration_that_does_not_load_leaves_the_window_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG", str(tmp_path / "missing.toml"))
    assert AuditBatch.configure("cdg", NO_JUDGE).options.window is None


def test_the_model_is_needed_for_llm_keywords_a_judge_or_a_model_built_strategy():
    assert not AuditBatch("cdg", NO_JUDGE).needs_model
    assert AuditBatch("cdg", AuditOptions(judge_mode="whole")).needs_model
    assert AuditBatch("cdg", AuditOptions(judge_mode="none", keywords="llm")).needs_model
    assert AuditBatch("lightrag", NO_JUDGE).needs_model  # indexes with the model


def test_pending_is_what_the_run_then_audits(index, cases, tmp_path):
    sink = JsonlFileSink(tmp_path / "traces.jsonl")
    batch = AuditBatch("cdg", NO_JUDGE)
    assert batch.pending(cases + cases[:1], sink) == len(cases)  # a repeated id counts once
    batch.run(cases[:2], index, sink)
    assert batch.pending(cases, sink) == len(cases) - 2
    summary = batch.run(cases, index, sink)
    assert (summary.done, summary.skipped) == (len(cases) - 2, 2)
    assert batch.pending(cases, sink) == 0
    assert AuditBatch("bm25", NO_JUDGE).pending(cases, sink) == len(cases)  # another strategy


def test_the_judges_room_caps_the_seed_target_of_every_strategy(index, cases):
    # Without --target-tokens the passage baselines take top_k passages, window or not; with
    # one, the judge's room caps it for them as for cdg.
    assert ContextOptions(judge_room=300).effective_seed_target(fallback=False) is None
    assert ContextOptions(seed_target=3000, judge_room=300).effective_seed_target(fallback=False) == 300
    case = cases[0]
    opts = NO_JUDGE.with_context(seed_target=3000)
    wide = audit_case(case, index, "bm25", None, opts)
    narrow = audit_case(case, index, "bm25", None,
                        AuditOptions(judge_mode="none", window=JudgeWindow(2000, "small", 512))
                        .with_context(seed_target=3000))
    assert narrow.window is not None and narrow.context_tokens <= narrow.settings["target_tokens"]
    assert narrow.context_tokens < wide.context_tokens


def test_a_trace_records_a_seed_target_only_for_strategies_that_aim_at_one(index, cases):
    """raw takes each routed SKILL whole: a recorded target would tell the trace's reader its
    context was cut to it."""
    opts = NO_JUDGE.with_context(seed_target=700)
    raw = audit_case(cases[0], index, "raw", None, opts)
    cdg = audit_case(cases[0], index, "cdg", None, opts)
    assert raw.settings["target_tokens"] is None
    assert cdg.settings["target_tokens"] == 700
    assert raw.context_tokens > 700  # the whole document, indeed not cut to the target
