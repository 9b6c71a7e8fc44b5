"""Honest estimates (issue #35 item 9): model speed fitted from the usage records the gateway
writes, model start-ups timed into the store, and the Replay plan and progress built on them."""

from __future__ import annotations

import pytest

from components.model_run import MAX_SHARE, Step, share, step_text
from store.llm_cache import SqlUsageLog
from store.model_speed import measured_speed, record_startup, startup_seconds
from workbench.llm.speed import describe_duration, fit_speed
from workbench.llm.usage import Usage


def test_fit_recovers_prompt_and_generation_speed():
    # P = 50 prompt tok/s, G = 20 generated tok/s: latency = p/50 + c/20 (hand-computed):
    # (1000, 100) -> 20 + 5 = 25 s; (500, 200) -> 10 + 10 = 20 s; (2000, 50) -> 40 + 2.5.
    speed = fit_speed("m", [(1000, 100, 25.0), (500, 200, 20.0), (2000, 50, 42.5)])
    assert speed.prompt_tps == pytest.approx(50) and speed.generated_tps == pytest.approx(20)
    assert speed.call_seconds(1500, 60) == pytest.approx(30 + 3)
    assert speed.describe() == "50 prompt tok/s, 20 generated tok/s (3 calls)"
    assert speed.typical_completion == 100


def test_too_few_or_inseparable_calls_fall_back_honestly():
    assert fit_speed("m", [(1000, 100, 25.0), (500, 200, 20.0)]) is None  # two calls: too few
    # Every call with the same token counts: P and G cannot be told apart.
    same = fit_speed("m", [(900, 40, 3.0), (900, 40, 5.0), (900, 40, 4.0)])
    assert same.prompt_tps is None and same.call_seconds(5000, 500) == 4.0  # the median
    assert same.describe() == "4 s per call (3 calls)"
    assert describe_duration(95) == "about 2 min" and describe_duration(40) == "about 40 s"


def test_speed_comes_from_live_successful_calls_in_the_store(engine):
    log = SqlUsageLog(engine)
    for p, c, ms in ((1000, 100, 25_000), (500, 200, 20_000), (2000, 50, 42_500)):
        log(Usage(p, c, ms, None, False, "embedded/qwen", "judge", "judge:x"))
    # Cache hits, failures and other models must not count.
    log(Usage(1000, 100, 2.0, None, True, "embedded/qwen", "judge", "judge:x"))
    log(Usage(1000, 100, 900.0, None, False, "embedded/qwen", "judge", "judge:x", error="timeout"))
    log(Usage(1000, 100, 1.0, None, False, "openai/gpt-4o", "judge", "judge:x"))
    speed = measured_speed(engine, "embedded/qwen", "judge")
    assert speed.calls == 3 and speed.prompt_tps == pytest.approx(50)
    assert measured_speed(engine, "embedded/qwen", "keyworder") is None
    assert startup_seconds(engine, "embedded/qwen") is None
    for seconds in (80.0, 95.0, 300.0):
        record_startup(engine, "embedded/qwen", seconds)
    assert startup_seconds(engine, "embedded/qwen") == 95.0  # the median of the last ones


def test_the_bar_moves_with_calls_and_time_but_never_claims_done():
    assert share(10, 40, 0, 0) == 0.25
    assert share(10, 40, 4, 3) == 0.75  # the calls are further than the clock
    assert share(400, 40, 2, 0) == MAX_SHARE  # past the estimate: it waits there
    assert share(10, None, 0, 0) == 0.0
    text = step_text(Step("Judging", lambda: None, 40, calls=2, source="measured"), 70, 1)
    assert text == ("Judging · model call 2 of 2 · 70 s of about 40 s (measured); slower than "
                    "measured, still working")


def test_replay_plan_says_the_measured_estimate_and_the_startup(engine, monkeypatch):
    from pages import _replay_rerun as rr
    from workbench.audit.cases import case_from_dict
    from workbench.llm import load_config

    monkeypatch.delenv("WORKBENCH_LLM_MODE", raising=False)
    monkeypatch.delenv("WORKBENCH_EMBEDDED_URL", raising=False)
    config = load_config(env={})
    case = case_from_dict({"id": "c1", "model_response": "We refund you.", "label": "negative"})
    p = rr.plan(engine, config, case, ["cdg"], "lexical", "whole", {"cdg": None})
    assert p.calls == {"judge": 1} and p.seconds is None and p.needs_startup
    words = rr.plan_words(p, ["cdg"], "lexical", "whole")
    assert "no speed measured for this model yet" in words and "First the model starts" in words
    from workbench.llm.tokens import count_tokens
    from workbench.llm.transport import key_model

    model = key_model(config.role("judge"))  # the model name the usage rows carry
    log = SqlUsageLog(engine)
    for prompt, c, ms in ((1000, 100, 25_000), (500, 200, 20_000), (2000, 50, 42_500)):
        log(Usage(prompt, c, ms, None, False, model, "judge", "judge:x"))
    record_startup(engine, model, 95.0)
    p = rr.plan(engine, config, case, ["cdg"], "lexical", "whole", {"cdg": None})
    # No stored trace: prompt = the case's text + the default target (1600) + 700 for the
    # template; the typical completion is 100 tokens. At 50 and 20 tok/s:
    prompt = count_tokens("We refund you.") + 1600 + 700
    assert p.seconds == pytest.approx(prompt / 50 + 100 / 20)
    words = rr.plan_words(p, ["cdg"], "lexical", "whole")
    assert "measured on this machine: judge 50 prompt tok/s, 20 generated tok/s" in words
    assert "First the model starts, about 2 min as measured" in words


def test_start_up_runs_as_its_own_step_before_the_job():
    """The two bars of a re-run, in a page: the start-up's, then the job's, each done."""
    from streamlit.testing.v1 import AppTest

    def page():
        import time

        import streamlit as st

        from components.model_run import Step, run_steps

        order = []
        result = run_steps([Step("Starting the model", lambda: order.append("start") or
                                 time.sleep(1.2), about_s=1.0, source="measured")],
                           Step("Judging", lambda: order.append("judge") or "verdict", 5.0,
                                calls=1, calls_done=lambda: 0))
        st.text(f"{result} after {' then '.join(order)}")

    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception
    assert [t.value for t in at.text] == ["verdict after start then judge"]
    bars = [p.proto.text for p in at.get("progress")]
    assert len(bars) == 2 and bars[0].startswith("Starting the model · done in ")
    assert bars[1].startswith("Judging · done in ")


def test_a_failing_step_raises_in_the_page_thread():
    from streamlit.testing.v1 import AppTest

    def page():
        import streamlit as st

        from components.model_run import Step, run_steps

        try:
            run_steps([], Step("Judging", lambda: 1 / 0))
        except ZeroDivisionError:
            st.text("the page saw the error")

    at = AppTest.from_function(page, default_timeout=30).run()
    assert [t.value for t in at.text] == ["the page saw the error"]


def test_extraction_and_other_pages_get_the_same_estimate_and_start_up_rule(engine, monkeypatch):
    from pages._model_start import calls_estimate, needs_startup, startup_steps
    from workbench.llm import load_config
    from workbench.llm.transport import key_model

    config = load_config(env={})
    seconds, words = calls_estimate(engine, config, "extractor", [900, 1200])
    assert seconds is None and words == "no extractor speed measured on this machine yet"
    log = SqlUsageLog(engine)
    model = key_model(config.role("extractor"))
    for p, c, ms in ((1000, 100, 25_000), (500, 200, 20_000), (2000, 50, 42_500)):
        log(Usage(p, c, ms, None, False, model, "extractor", "extract:x"))
    seconds, words = calls_estimate(engine, config, "extractor", [900, 1200])
    assert seconds == pytest.approx(900 / 50 + 100 / 20 + 1200 / 50 + 100 / 20)
    assert words.startswith("about 52 s (measured on this machine: 50 prompt tok/s")
    # Replayed recordings or an attached `workbench model serve` start nothing here.
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    assert not needs_startup(config, ["extractor"]) and startup_steps(engine, config, ["judge"]) == []
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "live")
    assert not needs_startup(config.attached_to("http://127.0.0.1:9/v1"), ["extractor"])
    assert not needs_startup(config, [])
