"""k1, clipping, the entropy gate and the OPD loss, on hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.train.opd import (
    always_supervised,
    entropy_gate,
    k1_estimator,
    opd_advantage,
    opd_loss,
    token_entropy,
)


def test_k1_and_its_clipping_by_hand():
    student = torch.log(torch.tensor([0.5, 0.25, 0.4]))
    teacher = torch.log(torch.tensor([0.25, 0.5, 0.5]))
    # k1 = log(0.5/0.25) = ln 2 = 0.693147, log(0.25/0.5) = -ln 2, log(0.4/0.5) = -0.223144
    expected = [math.log(2), -math.log(2), math.log(0.8)]
    assert k1_estimator(student, teacher).tolist() == pytest.approx(expected)
    # clip 0.5: A = -clip(k1) = [-0.5, +0.5, +0.223144]
    adv = opd_advantage(student, teacher, clip=0.5)
    assert adv.tolist() == pytest.approx([-0.5, 0.5, -math.log(0.8)])
    with pytest.raises(ValueError, match="positive"):
        opd_advantage(student, teacher, clip=0)


def test_advantage_is_detached():
    student = torch.log(torch.tensor([0.5, 0.25])).requires_grad_()
    adv = opd_advantage(student, torch.zeros(2))
    assert not adv.requires_grad


def _hand_logits(peaks):
    # Logits [s, 0, 0, 0]: the larger s, the lower the entropy.
    rows = [[s, 0.0, 0.0, 0.0] for s in peaks]
    return torch.tensor([rows])


def test_token_entropy_by_hand():
    ent = token_entropy(torch.zeros(1, 1, 4))
    assert float(ent) == pytest.approx(math.log(4))


def test_entropy_gate_picks_top_20_percent_plus_verdict_and_termination():
    peaks = [5, 0.1, 3, 0.5, 4, 6, 1, 2, 2.5, 1.5]
    ent = token_entropy(_hand_logits(peaks))
    valid = torch.ones(1, 10, dtype=torch.bool)
    always = torch.zeros(1, 10, dtype=torch.bool)
    always[0, 6] = always[0, 9] = True  # verdict token and EOS
    gate = entropy_gate(ent, valid, always, 0.2)
    # 20 % of 10 tokens = 2: the flattest distributions are s = 0.1 (t1) and s = 0.5 (t3).
    assert gate[0].nonzero().flatten().tolist() == [1, 3, 6, 9]
    assert entropy_gate(ent, valid, None, 0.2)[0].nonzero().flatten().tolist() == [1, 3]


def test_entropy_gate_counts_only_valid_tokens():
    peaks = [5, 0.1, 3, 0.5, 4, 0.0, 0.0, 0.0]
    ent = token_entropy(_hand_logits(peaks))
    valid = torch.tensor([[True] * 5 + [False] * 3])  # padding has the highest entropy
    gate = entropy_gate(ent, valid, None, 0.2)
    assert gate[0].nonzero().flatten().tolist() == [1]  # ceil(0.2 * 5) = 1


class CharTokenizer:
    eos_token_id = 0

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i == 0))


def test_verdict_and_termination_tokens_are_found():
    text = '{"violation": true, "reason": "x"}'
    ids = [ord(c) for c in text] + [0, 0]
    marks = always_supervised(ids, CharTokenizer())
    at = text.index("true")
    assert [i for i, m in enumerate(marks) if m] == [at, at + 1, at + 2, at + 3, len(text)]


def test_opd_loss_value_and_gradient_by_hand():
    student = torch.log(torch.tensor([[0.5, 0.25, 0.4]])).requires_grad_()
    teacher = torch.log(torch.tensor([[0.25, 0.5, 0.5]]))
    gate = torch.tensor([[True, True, False]])
    valid = torch.ones(1, 3, dtype=torch.bool)
    loss, stats = opd_loss(student, teacher, gate, valid, clip=0.5)
    # A = [-0.5, 0.5, .]; loss = -(-0.5 * ln .5 + 0.5 * ln .25) / 2 = -(0.34657 - 0.69315) / 2
    assert float(loss.detach()) == pytest.approx(-(-0.5 * math.log(0.5) + 0.5 * math.log(0.25)) / 2)
    loss.backward()
    assert student.grad[0].tolist() == pytest.approx([0.25, -0.25, 0.0])
    assert stats.gated_share == pytest.approx(2 / 3)
    assert stats.kl == pytest.approx((math.log(2) - math.log(2) + math.log(0.8)) / 3)
