"""Activations from the judge's own pass (issue 57 item 1), without a model: the prompt's
rendering, where the reply sits in its tokens, the pooled features and their ids, which calls
are read in the pass, and the features kept beside a run (resume, cached answers)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.audit.activations import FeatureWriter
from workbench.audit.cases import case_from_dict
from workbench.audit.judge import judge_messages
from workbench.audit.trace import AuditTrace
from workbench.decision import features as ff
from workbench.decision.learn import Config
from workbench.llm.onepass import OnePass, Reading, chatml, reply_span


def test_chatml_is_the_embedded_models_template_with_the_answer_opened():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert chatml(msgs) == ("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                            "<|im_start|>assistant\n")
    # Qwen2.5's template adds its own system turn when none is given
    assert chatml(msgs[1:]).startswith("<|im_start|>system\nYou are Qwen, created by Alibaba")


def test_reply_span_finds_the_tokens_between_the_reply_tags():
    prompt = 'P<reply>\n"Héllo ok"\n</reply>\nQ?'
    data = prompt.encode()
    # tokens cut anywhere, one of them inside the two bytes of "é"
    cuts = [0, 1, 9, 11, 12, 16, 19, 27, len(data)]
    pieces = [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]
    assert b"".join(pieces) == data
    start = data.index(b'"H')
    end = data.index(b"\n</reply>")
    got = reply_span(prompt, pieces)
    assert got is not None
    a, b = got
    # the span covers exactly the tokens overlapping the reply's bytes
    at = np.cumsum([0] + [len(p) for p in pieces])
    assert at[a] <= start < at[a + 1] and at[b - 1] < end <= at[b]
    assert reply_span(prompt, pieces[:-1]) is None  # pieces that do not spell the prompt
    assert reply_span("no tags here", [b"no tags here"]) is None


def test_features_are_ids_pooling_times_100_plus_layer_and_old_ids_mean_the_last_token():
    assert ff.feature_id("last", 20) == 20 and ff.feature_id("reply_max", 20) == 220
    assert ff.split_feature(120) == ("reply_mean", 20)
    assert ff.feature_words(320) == "layer 20, the reply's last token"
    with pytest.raises(ValueError):
        ff.split_feature(720)
    assert Config("probe", 20, 0.1).label() == "probe at layer 20, C=0.1"
    assert Config("probe", 220, 0.1).label() == "probe at layer 20, the max over the reply, C=0.1"


def test_pool_reads_the_last_token_and_the_reply_three_ways():
    # layer 2: five positions; layer 4: the last position only (llama.cpp prunes the last layer)
    rows = {2: np.array([[0, 0], [1, 5], [3, 1], [2, 2], [9, 9]], dtype=np.float32),
            4: np.array([[7, 7]], dtype=np.float32)}
    ids, arr = ff.pool(rows, (1, 4), [2, 4])
    assert ids == [2, 4, 102, 202, 302]  # no reply poolings of the last-only layer
    want = {2: [9, 9], 4: [7, 7], 102: [2, 8 / 3], 202: [3, 5], 302: [2, 2]}
    for i, fid in enumerate(ids):
        assert np.allclose(arr[i], want[fid]), fid
    # the reply not found: the same feature ids (every case of a run holds one set), the
    # reply's poolings NaN, which a scorer leaves unscored
    same, arr = ff.pool(rows, None, [2, 4])
    assert same == ids and np.isnan(arr[2:]).all() and np.isfinite(arr[:2]).all()
    assert ff.finite_rows(arr).tolist() == [True, True, False, False, False]


def test_only_the_judges_first_ask_is_read_in_the_pass():
    assert OnePass.wants("judge:mor-001:cdg")
    for step in ("judge:mor-001:cdg:evidence", "judge:mor-001:cdg:sample3", "keywords:mor-001",
                 "judge:mor-001:cdg:part1", "extract:block"):
        assert not OnePass.wants(step), step


def _case(cid: str, reply: str):
    return case_from_dict({"id": cid, "model_response": reply, "label": "negative",
                           "conversation": [{"role": "user", "content": "Can I get a refund?"}]})


CONTEXT = "[R1] refund-desk · MUST\nWhen: a refund is asked for\nThen: check the order first"


class FakeReader:
    source = "embedded"

    def __init__(self):
        self.reads = 0

    def read(self, messages):
        self.reads += 1
        return Reading(np.full((2, 3), 1.0), (20, 120), 40, 5, 0.5)


class FakeOnePass:
    """What FeatureWriter needs of a OnePass: take() the judge's reading, reader() else."""

    def __init__(self):
        self.kept = {}
        self.fake = FakeReader()
        self.source = "embedded"

    def take(self, messages):
        return self.kept.pop(ff.prompt_sha(messages), None)

    def reader(self):
        return self.fake


def test_feature_writer_takes_the_judges_reading_reads_cached_ones_and_resumes(tmp_path):
    cases = {c.id: c for c in (_case("a", "Refunded."), _case("b", "Let me check."))}
    onepass = FakeOnePass()
    # "a" was judged live: its reading is waiting; "b"'s answer came from the cache
    onepass.kept[ff.prompt_sha(judge_messages(cases["a"], CONTEXT))] = Reading(
        np.full((2, 3), 2.0), (20, 120), 41, 6, 0.7)
    folder = tmp_path / "run.features"
    writer = FeatureWriter(folder, cases, onepass)
    for cid in ("a", "b", "zz"):
        writer(AuditTrace(id=cid, strategy="cdg", context=CONTEXT))
    writer(AuditTrace(id="a", strategy="cdg", context=""))  # no context: nothing to read
    assert writer.summary.captured == 2 and writer.from_judge == 1 and onepass.fake.reads == 1
    fs = ff.load_features(folder, ids=["a", "b"])
    assert fs.layers == (20, 120)
    assert np.allclose(fs.arrays[0], 2.0) and np.allclose(fs.arrays[1], 1.0)
    again = FeatureWriter(folder, cases, onepass)  # a resumed audit: nothing read twice
    again(AuditTrace(id="b", strategy="cdg", context=CONTEXT))
    assert again.summary.captured == 0 and onepass.fake.reads == 1


class Transport:
    supports_onepass = True

    def __init__(self):
        self.sent = []
        self.fail_first = False

    def send(self, request, role, *, key, onepass=None):
        from workbench.llm.transport import AttemptError, RawResponse

        self.sent.append(onepass)
        if self.fail_first and len(self.sent) == 1:
            raise AttemptError("server_error", "503", retryable=True)
        return RawResponse('{"ok": true}', "stop", 10, 2, None, "")

    def endpoint(self, role):
        return "fake"


def test_the_gateway_hands_the_onepass_to_the_first_attempt_of_the_judges_first_ask():
    from workbench.llm import Gateway
    from workbench.llm.config import load_config

    transport = Transport()
    gw = Gateway(load_config(env={}), transport=transport, sleep=lambda s: None)
    tap = OnePass()
    gw.onepass = tap
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    msgs = [{"role": "user", "content": "x"}]
    gw.complete_json("judge", msgs, schema, step="judge:c1:cdg", use_cache=False)
    gw.complete_json("judge", msgs, schema, step="judge:c1:cdg:evidence", use_cache=False)
    assert transport.sent == [tap, None]
    transport.sent.clear()
    transport.fail_first = True  # a retried attempt is read by the server, not again here
    gw.complete_json("judge", msgs, schema, step="judge:c2:cdg", use_cache=False)
    assert transport.sent == [tap, None]


def test_a_reading_that_fails_never_stops_the_judge_or_the_audit(tmp_path):
    """Activations are an extra: a read that fails (memory, a library that cannot read) is
    counted and named; the judge is asked as usual and the trace stands without features."""
    from workbench.llm.transport import _lease

    class Broken(FakeOnePass):
        failures: list = []

        def lease(self, request, server):
            raise RuntimeError("llama.cpp stopped reading the prompt (code 1)")

        def reader(self):
            raise RuntimeError("could not load the reader")

    broken = Broken()
    assert _lease(broken, {"messages": []}, object()) is None
    assert broken.failures == ["llama.cpp stopped reading the prompt (code 1)"]
    cases = {"a": _case("a", "Refunded.")}
    writer = FeatureWriter(tmp_path / "run.features", cases, broken)
    writer(AuditTrace(id="a", strategy="cdg", context=CONTEXT))
    assert writer.summary.captured == 0 and writer.failed == ["a: could not load the reader"]
