"""A verdict's violation probability: token log-probabilities read where the verdict is
written, the sampled fallback for servers without them, and what the trace keeps."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.scripted import ScriptedTransport, scripted_gateway
from workbench.audit import AuditIndex, audit_case, load_cases
from workbench.audit.judge import ContextUnit, ProbabilityOptions, judge_checklist, judge_whole
from workbench.audit.pipeline import AuditOptions
from workbench.audit.trace import AuditTrace
from workbench.graph import PolicyIndex
from workbench.llm.config import load_config
from workbench.llm.fake_server import FakeChatServer, reply, role_env
from workbench.llm.gateway import Gateway
from workbench.llm.logprobs import compact_logprobs, probability_of, value_distribution

ROOT = Path(__file__).resolve().parents[1]

REPLY = "Sure, I will refund you right away, no need to check anything."


def lp(*entries):
    """Compact log-probabilities from (token, logprob, {alternative: logprob}) triples."""
    return [[t, p, [[a, q] for a, q in alts.items()]] for t, p, alts in entries]


def test_the_verdict_token_gives_the_probability_normalised_over_true_and_false():
    # As llama.cpp returned it for the 1.5B judge (tokens of '{"violation": false, ...'):
    # at ' false' the model had ' "' -0.85, ' false' -1.05, ' true' -1.73.
    tokens = lp(("{\n", -0.15, {}), (' "', 0.0, {}), ("viol", -1.1, {}), ("ation", -7.0, {}),
                ('":', -0.04, {}), (" false", -1.05, {' "': -0.85, " false": -1.05, " true": -1.73}),
                (",\n", -3.5, {}))
    p = probability_of(tokens, "violation", "true", ("true", "false"))
    assert p == pytest.approx(math.exp(-1.73) / (math.exp(-1.73) + math.exp(-1.05)))
    assert round(p, 3) == 0.336  # the tokens that begin no allowed value (' "') are left out


def test_a_token_that_merges_the_colon_and_the_value_is_read_after_the_colon():
    tokens = lp(('{"violation', -0.1, {}), ('": true', -0.2, {'": true': -0.2, '": false': -1.9,
                                                             '":"': -4.0}))
    p = probability_of(tokens, "violation", "true", ("true", "false"))
    assert p == pytest.approx(1 / (1 + math.exp(-1.9 + 0.2)))


def test_each_occurrence_of_a_key_is_read_on_its_own_and_prefixes_count_once():
    tokens = lp(('{"checks": [{"status": "', 0, {}),
                ("viol", -0.3, {"viol": -0.3, "f": -1.5, "not": -2.0}), ('ated"}, {"status": "', 0, {}),
                ("not", -0.1, {"not": -0.1, "v": -3.0, "followed": -2.5}), (' applicable"}]}', 0, {}))
    statuses = ("not applicable", "followed", "violated")
    first = value_distribution(tokens, "status", statuses, 0)
    second = value_distribution(tokens, "status", statuses, 1)
    z = math.exp(-0.3) + math.exp(-1.5) + math.exp(-2.0)
    assert first["violated"] == pytest.approx(math.exp(-0.3) / z)
    assert second["not applicable"] > 0.8 and second["violated"] == pytest.approx(
        math.exp(-3.0) / (math.exp(-0.1) + math.exp(-3.0) + math.exp(-2.5)))
    assert value_distribution(tokens, "status", statuses, 2) is None  # no third value


def test_server_output_of_the_wrong_shape_reads_as_no_log_probabilities():
    assert compact_logprobs(None) is None
    assert compact_logprobs({"content": "x"}) is None
    assert compact_logprobs({"content": [{"token": 1, "logprob": -1.0}]}) is None
    assert compact_logprobs({"content": [{"token": "a", "logprob": 3.0}]}) is None  # > 0
    assert compact_logprobs([["a", float("nan"), []]]) is None
    # The OpenAI form becomes the compact one; alternatives below the floor are dropped.
    raw = {"content": [{"token": "a", "logprob": -0.5,
                        "top_logprobs": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -20.0}]}]}
    assert compact_logprobs(raw) == [["a", -0.5, [["a", -0.5]]]]
    assert probability_of(None, "violation", "true", ("true", "false")) is None


def _unit():
    return [ContextUnit("R1", "[R1] (required)\n  Do: verify the booking before any refund")]


def _case():
    from workbench.audit.cases import AuditCase

    return AuditCase(id="c1", model_response=REPLY, session="s1")


def test_without_log_probabilities_k_sampled_answers_give_the_share_of_violations():
    answers = iter([
        {"violation": False, "violated_rules": [], "evidence": [], "reason": "complies"},  # the verdict
        *[{"violation": v, "violated_rules": ["R1"] if v else [], "evidence": [], "reason": "r"}
          for v in (True, True, False, True, False)],
    ])
    script = ScriptedTransport(lambda request: next(answers), logprobs=False)
    gw = scripted_gateway(script)
    judged = judge_whole(gw, _case(), "[R1] ...", _unit(), "judge:c1",
                         ProbabilityOptions(samples=5, temperature=0.7))
    v = judged.verdict
    assert (v.violation, v.probability, v.probability_source) == (False, 0.6, "sampled:5")
    samples = script.requests[1:]
    assert [r["seed"] for r in samples] == [1, 2, 3, 4, 5]
    assert {r["temperature"] for r in samples} == {0.7} and "logprobs" not in samples[0]
    assert script.requests[0]["logprobs"] is True  # asked first; the server gave none
    assert [c.step for c in judged.calls] == ["judge"] + [f"judge:sample{i}" for i in range(1, 6)]


def test_the_sampled_fallback_runs_over_a_real_http_server_that_ignores_logprobs(tmp_path):
    verdict = {"violation": True, "violated_rules": ["R1"], "evidence": ["refund you right away"],
               "reason": "Breaks [R1]."}
    with FakeChatServer(default=reply(verdict), logprobs=False) as srv:
        gw = Gateway(load_config(env=role_env(srv.api_base)))
        judged = judge_whole(gw, _case(), "[R1] ...", _unit(), "judge:c1", ProbabilityOptions(samples=3))
        gw.close()
    assert judged.verdict.probability == 1.0 and judged.verdict.probability_source == "sampled:3"
    assert len(srv.requests) == 4
    # The same server answering log-probabilities: no sample is drawn.
    with FakeChatServer(default=reply(verdict)) as srv:
        gw = Gateway(load_config(env=role_env(srv.api_base)))
        judged = judge_whole(gw, _case(), "[R1] ...", _unit(), "judge:c1")
        gw.close()
    assert (judged.verdict.probability, judged.verdict.probability_source) == (1.0, "logprobs")
    assert len(srv.requests) == 1


def test_probability_off_asks_for_nothing_and_records_none():
    script = ScriptedTransport(lambda r: {"violation": False, "violated_rules": [], "evidence": [],
                                          "reason": "fine"})
    judged = judge_whole(scripted_gateway(script), _case(), "[R1]", _unit(), "j",
                         ProbabilityOptions(method="off"))
    assert judged.verdict.probability is None and judged.verdict.probability_source == ""
    assert "logprobs" not in script.requests[0] and len(script.requests) == 1


def test_a_checklist_reads_each_rules_probability_and_the_case_takes_the_largest():
    units = [ContextUnit("R1", "[R1] ..."), ContextUnit("R2", "[R2] ...")]
    text = json.dumps({"checks": [{"id": "R1", "status": "followed"}, {"id": "R2", "status": "violated"}],
                       "evidence": ["no need to check anything"], "reason": "Skips [R2]."})
    head, rest = text.split('"status": "', 1)
    second_head, tail = rest.split('"status": "', 1)
    tokens = [
        {"token": head + '"status": "', "logprob": 0.0, "top_logprobs": []},
        {"token": "f", "logprob": -0.2, "top_logprobs": [{"token": "f", "logprob": -0.2},
                                                         {"token": "viol", "logprob": -2.0}]},
        {"token": second_head[1:] + '"status": "', "logprob": 0.0, "top_logprobs": []},
        {"token": "viol", "logprob": -0.4, "top_logprobs": [{"token": "viol", "logprob": -0.4},
                                                            {"token": "not", "logprob": -1.2}]},
        {"token": tail[4:], "logprob": 0.0, "top_logprobs": []},
    ]
    from workbench.llm.transport import RawResponse

    def answer(request):
        return RawResponse(text, "stop", 100, 40, None, "scripted", compact_logprobs({"content": tokens}))

    gw = scripted_gateway(ScriptedTransport(answer))
    judged = judge_checklist(gw, _case(), "[R1] ...\n[R2] ...", units, "j")
    v = judged.verdict
    p1 = math.exp(-2.0) / (math.exp(-0.2) + math.exp(-2.0))
    p2 = math.exp(-0.4) / (math.exp(-0.4) + math.exp(-1.2))
    assert [c["p_violated"] for c in v.checklist] == [round(p1, 4), round(p2, 4)]
    assert v.violation and v.violated_rules == ["R2"] and v.probability == round(p2, 4)
    assert v.evidence == [{"start": REPLY.index("no need"), "end": len(REPLY) - 1,
                           "quote": "no need to check anything"}]


def test_audit_writes_a_probability_for_every_judged_case_by_default(tmp_path):
    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures" / "audit" / "merchant_index.json"))
    cases = [c for c in load_cases(ROOT / "fixtures" / "audit" / "merchant_cases.jsonl") if c.skills]
    script = ScriptedTransport(lambda r: {"violation": False, "violated_rules": [], "evidence": [],
                                          "reason": "complies"})
    gw = scripted_gateway(script)
    for case in cases:
        trace = audit_case(case, index, "cdg", gw, AuditOptions())
        assert trace.verdict is not None and trace.verdict.probability == 0.0
        assert trace.verdict.probability_source == "logprobs"
        back = AuditTrace.from_dict(json.loads(json.dumps(trace.to_dict())))
        assert back.verdict.probability == 0.0 and back == trace


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "audit" / "logprobs_recorded.jsonl"


def _recorded(schema: str) -> dict:
    return next(e for line in RECORDED.read_text(encoding="utf-8").splitlines()
                if (e := json.loads(line))["schema"] == schema)


def test_recorded_real_verdict_reads_the_probability_its_greedy_answer_implies():
    # A whole-context answer of the 1.5B judge over llama.cpp, as the response cache keeps it.
    entry = _recorded("verdict")
    answer = json.loads(entry["text"])
    tokens = compact_logprobs(entry["logprobs"])
    assert tokens is not None
    p = probability_of(tokens, "violation", "true", ("true", "false"))
    # Near-greedy decoding picks the likelier allowed value: the probability agrees with it.
    assert p is not None and 0.0 < p < 1.0 and (p > 0.5) == answer["violation"]


def test_recorded_real_checklist_reads_each_status_where_the_answer_writes_it():
    entry = _recorded("checklist")
    answer = json.loads(entry["text"])
    tokens = compact_logprobs(entry["logprobs"])
    statuses = ("not applicable", "followed", "violated")
    checks = answer["checks"]
    assert len(checks) > 10
    for i, check in enumerate(checks):
        dist = value_distribution(tokens, "status", statuses, i)
        assert dist is not None and abs(sum(dist.values()) - 1) < 1e-9
        # The status written is the likeliest allowed one at its own token, for every entry:
        # reading the wrong occurrence would break this somewhere in 20-odd entries.
        assert max(dist, key=dist.get) == check["status"], (i, dist, check)
    assert value_distribution(tokens, "status", statuses, len(checks)) is None
