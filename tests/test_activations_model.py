"""Activation capture on a real embedded model (one short judging prompt), and the capture
loop over a run with a stand-in reader (resume, cases without context)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from workbench.audit.activations import capture_run
from workbench.audit.cases import case_from_dict
from workbench.audit.judge import judge_messages
from workbench.audit.trace import AuditTrace
from workbench.decision import features as ff
from workbench.llm.activations import Captured


def _case(cid: str, reply: str):
    return case_from_dict({"id": cid, "model_response": reply, "label": "negative",
                           "conversation": [{"role": "user", "content": "Can I get a refund?"}]})


CONTEXT = "[R1] refund-desk · MUST\nWhen: a refund is asked for\nThen: check the order first"


class FakeReader:
    source = "fake"

    def __init__(self):
        self.calls = 0

    def capture(self, messages):
        self.calls += 1
        v = np.full((2, 4), float(len(messages[1]["content"])))
        return Captured(v, (2, 4), 10, 0.01)


def test_capture_run_keys_by_prompt_resumes_and_passes_over_cases_without_context(tmp_path):
    cases = {c.id: c for c in (_case("a", "Yes, refunded."), _case("b", "Let me check."),
                               _case("c", "No."))}
    traces = [AuditTrace(id="a", strategy="cdg", context=CONTEXT),
              AuditTrace(id="b", strategy="cdg", context=CONTEXT),
              AuditTrace(id="c", strategy="cdg", context=""),
              AuditTrace(id="zz", strategy="cdg", context=CONTEXT)]
    folder = tmp_path / "run.features"
    reader = FakeReader()
    first = capture_run(traces, cases, folder, reader, limit=1)
    assert first.captured == 1 and reader.calls == 1
    again = capture_run(traces, cases, folder, reader)
    assert again.captured == 1 and again.already == 1 and again.no_context == ["c"]
    assert again.no_case == ["zz"]
    recs = {r.case_id: r for r in ff.read_index(folder)}
    assert recs["a"].prompt_sha256 == ff.prompt_sha(judge_messages(cases["a"], CONTEXT))
    # a changed context is another prompt: captured anew, never matched to the old array
    changed = [replace(traces[0], context=CONTEXT + "\n[R2] extra")]
    assert capture_run(changed, cases, folder, reader).captured == 1


class PoolingReader(FakeReader):
    """Reads the last prompt token and the reply's mean at layers 2 and 4 (ids 2, 4, 102, 104)."""

    feature_ids = (2, 4, 102, 104)

    def capture(self, messages):
        self.calls += 1
        return Captured(np.ones((4, 4)), self.feature_ids, 10, 0.01)


def test_a_case_captured_with_fewer_features_is_read_again_and_replaced(tmp_path):
    """An older capture kept the last prompt token only, and its records were 'already there'
    for ever: the built-in scorer, which reads the reply's mean, could never score the run."""
    cases = {"a": _case("a", "Yes, refunded.")}
    traces = [AuditTrace(id="a", strategy="cdg", context=CONTEXT)]
    folder = tmp_path / "run.features"
    assert capture_run(traces, cases, folder, FakeReader()).captured == 1  # ids (2, 4)
    reader = PoolingReader()
    assert capture_run(traces, cases, folder, reader).captured == 1 and reader.calls == 1
    (rec,) = ff.read_index(folder)
    assert rec.layers == (2, 4, 102, 104)
    assert ff.load_features(folder, ids=["a"]).layers == (2, 4, 102, 104)
    again = capture_run(traces, cases, folder, reader)  # now complete: never read twice
    assert again.captured == 0 and again.already == 1 and reader.calls == 1
    # a reader of fewer features (the last token only) finds what it reads already there
    assert capture_run(traces, cases, folder, FakeReader()).already == 1


@pytest.mark.slow
@pytest.mark.model
def test_the_real_small_embedded_model_gives_one_vector_per_layer_for_a_judging_prompt():
    pytest.importorskip("transformers")
    from workbench.llm.activations import ActivationReader

    reader = ActivationReader("embedded:small", layers=(4, 12, 24))
    a = judge_messages(_case("a", "Yes, I refunded it without checking the order."), CONTEXT)
    b = judge_messages(_case("b", "Let me check your order first."), CONTEXT)
    ga, gb, ga2 = reader.capture(a), reader.capture(b), reader.capture(a)
    assert ga.array.shape == (3, 896) and ga.layers == (4, 12, 24)
    assert np.isfinite(ga.array).all() and ga.prompt_tokens > 50
    assert np.allclose(ga.array, ga2.array, atol=1e-4)  # the same prompt, the same states
    assert not np.allclose(ga.array[-1], gb.array[-1], atol=1e-2)  # another reply, another state
