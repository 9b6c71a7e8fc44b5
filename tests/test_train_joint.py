"""The joint step (GRPO for keywords + OPD for verdicts on one rollout batch): its loss by
hand, its reward, and a real step on a tiny Qwen2 model with the merchant fixture."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.tiny_models import merchant_student_teacher, one_thread  # noqa: E402
from workbench.audit.judge import judge_messages  # noqa: E402
from workbench.train.joint import (  # noqa: E402
    JointSettings,
    joint_loss,
    parse_verdict,
    train_joint,
    verified_rewards,
)
from workbench.train.models import LoraSettings  # noqa: E402
from workbench.train.opd import opd_loss  # noqa: E402
from workbench.train.rewards import keyword_closure  # noqa: E402
from workbench.train.runs import read_metrics  # noqa: E402
from workbench.train.trainers import TrainConfig  # noqa: E402


def test_the_joint_loss_by_hand():
    # Two keyword candidates of 2 tokens (the second candidate's last token is padding).
    kw_logp = torch.log(torch.tensor([[0.5, 0.25], [0.8, 0.1]]))
    adv = torch.tensor([1.0, -1.0])
    kw_valid = torch.tensor([[1, 1], [1, 0]])
    # GRPO: -(1*(ln .5 + ln .25) + (-1)*ln .8) / 3 tokens
    grpo = -((math.log(0.5) + math.log(0.25)) - math.log(0.8)) / 3
    # One judge completion of 2 tokens, both gated.
    j_logp = torch.log(torch.tensor([[0.5, 0.4]]))
    t_logp = torch.log(torch.tensor([[0.25, 0.5]]))
    gate = valid = torch.tensor([[True, True]])
    # A = -k1 = [-ln 2, -ln .8]; OPD = -(A . logp) / 2
    opd = -((-math.log(2)) * math.log(0.5) + (-math.log(0.8)) * math.log(0.4)) / 2
    got = joint_loss(kw_logp, adv, kw_valid, j_logp, t_logp, gate, valid, opd_weight=0.5)
    assert got.grpo == pytest.approx(grpo) and got.opd == pytest.approx(opd)
    assert float(got.total) == pytest.approx(grpo + 0.5 * opd)
    assert float(opd_loss(j_logp, t_logp, gate, valid)[0]) == pytest.approx(opd)
    # No candidate had a closure: the judgment term is absent, the retrieval term stays.
    empty = torch.zeros((0, 2))
    alone = joint_loss(kw_logp, adv, kw_valid, empty, empty, empty.bool(), empty.bool())
    assert float(alone.total) == pytest.approx(grpo) and alone.opd == 0.0


def test_the_joint_gradient_is_retrieval_plus_weighted_judgment():
    theta = torch.tensor([0.3, -0.2, 0.1], requires_grad=True)
    kw_logp = torch.log_softmax(theta, 0)[None, :2]
    j_logp = torch.log_softmax(2 * theta, 0)[None, 1:]
    args = (torch.tensor([0.7]), torch.ones(1, 2), j_logp, torch.log(torch.tensor([[0.2, 0.6]])),
            torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool))

    def grad(loss):
        return torch.autograd.grad(loss, theta, retain_graph=True)[0]

    g_joint = grad(joint_loss(kw_logp, *args, opd_weight=2.0).total)
    g_grpo = grad(joint_loss(kw_logp, *args, opd_weight=0.0).total)
    g_opd = torch.autograd.grad(opd_loss(j_logp, args[3], args[4], args[5])[0], theta)[0]
    assert torch.allclose(g_joint, g_grpo + 2.0 * g_opd)
    assert not torch.allclose(g_opd, torch.zeros(3))


def test_the_verified_reward_needs_a_closure_and_the_right_verdict():
    assert parse_verdict('{"violation": true, "reason": "x"}') is True
    assert parse_verdict('{"violation" : FALSE}') is False
    assert parse_verdict("I think it is fine") is None
    rewards = verified_rewards([True, True, False, True, True], [True, False, None, None, True],
                               [True, True, True, True, None])
    assert rewards == [1.0, 0.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("joint")
    with one_thread():
        yield (root, *merchant_student_teacher(root))


def _judge_prompt(cases, index, seen):
    def judge_prompt(i, text):
        # A tiny random model rarely writes valid keyword JSON; the fixture's first candidate of
        # each case stands in for a valid one so that the judgment stage runs every step.
        outcome = keyword_closure(cases[i], text, index)
        if not outcome.valid:
            first = not any(j == i for j, _ in seen)
            seen.append((i, text))
            if not first:
                return None
            outcome = keyword_closure(cases[i], '{"keywords": ["refund", "delay compensation"]}', index)
        if not outcome.closure_nonempty or outcome.context is None:
            return None
        return judge_messages(cases[i], outcome.context.text)
    return judge_prompt


def test_a_joint_step_updates_one_adapter_from_both_losses(setup):
    from peft.utils import load_peft_weights

    root, index, cases, records, student, teacher = setup
    usable = [(c, r) for c, r in zip(cases, records, strict=True) if r.violation is not None][:2]
    chosen = [c for c, _ in usable]
    prompts, labels = [r.keyword_prompt for _, r in usable], [r.violation for _, r in usable]
    cfg = TrainConfig(epochs=1, global_batch=4, micro_batch=2, group=2, learning_rate=1e-3,
                      max_new_tokens=8, temperature=0.7, top_p=0.9, max_steps=1, save_every=1)
    result = train_joint(student, teacher, prompts, _judge_prompt(chosen, index, []), labels,
                         root / "run", cfg, JointSettings(opd_weight=1.0, judge_max_new_tokens=6))
    row = read_metrics(result.run_dir)[0]
    assert row["step"] == 1 and 0.0 < row["closure_share"] <= 1.0
    assert row["loss"] == pytest.approx(row["loss_grpo"] + row["loss_opd"])
    assert row["kl"] != 0.0 and 0.0 < row["gated_share"] <= 1.0  # the teacher scored the verdicts
    assert row["judge_tokens"] > 0 and 0.0 <= row["reward_mean"] <= 1.0
    weights = load_peft_weights(str(result.adapter))
    assert any(float(w.abs().sum()) > 0 for k, w in weights.items() if "lora_B" in k)


def test_micro_batches_sum_to_the_full_batch_update(setup):
    # The same step in micro-batches of 1 and of 4 ends in (nearly) the same adapter: the
    # trainer's pieces add up to the one joint objective.
    from peft.utils import load_peft_weights

    root, index, cases, records, student, teacher = setup
    usable = [(c, r) for c, r in zip(cases, records, strict=True) if r.violation is not None][:2]
    chosen = [c for c, _ in usable]
    prompts, labels = [r.keyword_prompt for _, r in usable], [r.violation for _, r in usable]
    adapters = []
    for micro in (1, 4):
        cfg = TrainConfig(epochs=1, global_batch=4, micro_batch=micro, group=2, learning_rate=1e-3,
                          max_new_tokens=6, max_steps=1, save_every=1,
                          lora=LoraSettings(dropout=0.0))  # dropout would draw other masks
        done = train_joint(student, teacher, prompts, _judge_prompt(chosen, index, []), labels,
                           root / f"micro{micro}", cfg, JointSettings(judge_max_new_tokens=4))
        adapters.append(load_peft_weights(str(done.adapter)))
    a, b = adapters
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_bad_joint_settings_are_refused(setup):
    root, index, cases, records, student, teacher = setup
    with pytest.raises(ValueError, match="--opd-weight must be 0 or more"):
        train_joint(student, teacher, [records[0].keyword_prompt], lambda i, t: None, [True],
                    root / "bad", TrainConfig(group=2, global_batch=2), JointSettings(opd_weight=-1))
    with pytest.raises(ValueError, match="1 labels for 2 prompts"):
        train_joint(student, teacher, [records[0].keyword_prompt] * 2, lambda i, t: None, [True],
                    root / "bad", TrainConfig(group=2, global_batch=2))
