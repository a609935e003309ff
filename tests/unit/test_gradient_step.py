"""Stage 13.1's gradient step by hand, checked against torch.autograd."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError
from tinyformer.lessons.corpus import split_corpus, vocabulary
from tinyformer.lessons.gradient_step import (
    HIDDEN,
    LOGITS,
    TABLE,
    head_step,
    logit_step,
    teacher_forcing,
)
from tinyformer.lessons.train_data import encode_examples


def rounded(values, places: int = 3) -> list[float]:
    return [round(float(v), places) for v in values]


def test_the_step_on_the_logits_with_10_1s_numbers() -> None:
    step = logit_step(target=0, lr=1.0)
    assert rounded(step.probs) == [0.665, 0.245, 0.090]  # 10.1's softmax
    assert round(step.loss, 3) == 0.408  # -ln 0.665
    assert rounded(step.grad) == [-0.335, 0.245, 0.090]  # p - onehot
    assert rounded(step.new_logits) == [2.335, 0.755, -0.090]
    assert rounded(step.new_probs) == [0.772, 0.159, 0.068]
    assert step.new_loss < step.loss


@pytest.mark.parametrize("target", [0, 1, 2])
@pytest.mark.parametrize("lr", [0.01, 0.5, 3.0])
def test_both_steps_agree_with_autograd(target: int, lr: float) -> None:
    z = torch.tensor(LOGITS, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(z[None], torch.tensor([target]))
    loss.backward()
    step = logit_step(target, lr)
    assert step.loss == pytest.approx(loss.item())
    torch.testing.assert_close(step.grad, z.grad)
    torch.testing.assert_close(step.new_logits, z.detach() - lr * z.grad)

    e = torch.tensor(TABLE, dtype=torch.float64, requires_grad=True)
    h = torch.tensor(HIDDEN, dtype=torch.float64)
    head_loss = F.cross_entropy((h @ e.T)[None], torch.tensor([target]))
    head_loss.backward()
    head = head_step(target, lr)
    torch.testing.assert_close(head.logits, z.detach())  # z = h E^T = [2, 1, 0]
    torch.testing.assert_close(head.grad_table, e.grad)
    new_e = e.detach() - lr * e.grad
    torch.testing.assert_close(head.new_table, new_e)
    torch.testing.assert_close(head.new_probs, torch.softmax(h @ new_e.T, -1))
    # each logit moves |h|^2 = 5 times as far as in the step on z
    torch.testing.assert_close(head.new_logits - head.logits,
                               5.0 * (step.new_logits - step.logits))


def test_one_weight_of_the_head() -> None:
    head = head_step(0, 1.0)
    assert round(float(head.grad_table[0, 0]), 3) == -0.670  # (0.665 - 1) * 2
    assert round(float(head.new_table[0, 0]), 3) == 1.670


@pytest.mark.parametrize(("lr", "key"), [(0, "train_setting_range"),
                                         (1e9, "train_setting_range"),
                                         (-1.0, "train_setting_range"),
                                         (math.nan, "train_setting_type"),
                                         (math.inf, "train_setting_type"),
                                         ("1", "train_setting_type"),
                                         (True, "train_setting_type")])
def test_bad_learning_rates_raise_keyed_errors(lr, key: str) -> None:
    for step in (logit_step, head_step):
        with pytest.raises(ParameterError) as error:
            step(0, lr)
        assert error.value.key == key


def test_a_target_outside_the_vocabulary() -> None:
    with pytest.raises(ParameterError) as error:
        logit_step(3)
    assert error.value.key == "train_setting_range"


def test_teacher_forcing_is_the_training_pairs() -> None:
    forced = teacher_forcing()
    text = forced.example.text
    assert forced.example in split_corpus().train
    assert [p.reads for p in forced.pairs] == list(text[:-1])
    assert [p.target for p in forced.pairs] == list(text[1:])  # shifted by one
    data = encode_examples([forced.example], vocabulary())
    assert [p.in_answer for p in forced.pairs] == data.answer[0, : len(text) - 1].tolist()
    assert sum(p.in_answer for p in forced.pairs) == len(forced.example.answer)
