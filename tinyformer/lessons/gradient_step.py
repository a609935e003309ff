"""One training step by hand, on stage 10.1's three-word example (stage 13.1).

The logits z = [2, 1, 0] over 商家, 买家, 未知 give p = softmax(z) = [0.665, 0.245, 0.090].
With the right answer at index y the loss is L = -ln p[y] (cross-entropy), and its
gradient with respect to the logits is p - onehot(y): the right answer's logit gets
p[y] - 1 (negative: the step raises it), every other logit its own p (the step lowers
it). One step of plain gradient descent moves z to z - lr * (p - onehot).

One layer back: stage 10.1 computes the logits with the LM head z = h E^T from the last
hidden state h = [2, 1] and the table E [V, d] = [[1, 0], [0, 1], [0.5, -1]]. By the
chain rule dL/dE = (p - onehot)^T h, an outer product: row i is (p[i] - onehot[i]) * h.
A step on E changes logit i by -lr * (p[i] - onehot[i]) * |h|^2, so the same learning
rate moves the logits |h|^2 = 5 times as far as the step on z itself.

Teacher forcing: one training sequence (question and answer) is read once, and every
position predicts the next character at the same time: the targets are the inputs
shifted by one (tinyformer.training.next_token_pairs, what Train learns from).

Every number here is computed with torch; tests/unit/test_gradient_step.py checks them
against torch.autograd.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons.corpus import Example, split_corpus, vocabulary
from tinyformer.lessons.train_data import encode_examples
from tinyformer.training import IGNORE

LOGITS = (2.0, 1.0, 0.0)  # stage 10.1's example: 商家, 买家, 未知
HIDDEN = (2.0, 1.0)  # h, the last hidden state of stage 10.1
TABLE = ((1.0, 0.0), (0.0, 1.0), (0.5, -1.0))  # E [V, d]: z = h E^T = [2, 1, 0]
LR_BOUNDS = (0.01, 10.0)  # the page's learning rates: a visible step, never an explosion
DEFAULT_LR = 1.0


@dataclass(frozen=True)
class LogitStep:
    """One gradient-descent step on the logits themselves."""

    logits: torch.Tensor  # [V] z
    probs: torch.Tensor  # [V] p = softmax(z)
    target: int  # y, the right answer's index
    loss: float  # -ln p[y]
    grad: torch.Tensor  # [V] dL/dz = p - onehot(y)
    lr: float
    new_logits: torch.Tensor  # [V] z - lr * grad
    new_probs: torch.Tensor  # [V] softmax(new_logits)
    new_loss: float  # -ln new_probs[y]


@dataclass(frozen=True)
class HeadStep:
    """The same step carried one layer back, to the LM head's table E (z = h E^T)."""

    hidden: torch.Tensor  # [d] h
    table: torch.Tensor  # [V, d] E
    logits: torch.Tensor  # [V] h E^T
    probs: torch.Tensor  # [V]
    target: int
    loss: float
    grad_logits: torch.Tensor  # [V] p - onehot(y)
    grad_table: torch.Tensor  # [V, d] (p - onehot)^T h: row i = grad_logits[i] * h
    lr: float
    new_table: torch.Tensor  # [V, d] E - lr * grad_table
    new_logits: torch.Tensor  # [V] h E_new^T = z - lr * grad_logits * |h|^2
    new_probs: torch.Tensor  # [V]
    new_loss: float
    scale: float  # |h|^2: how much farther the logits move than in the step on z


def check_lr(lr: object) -> float:
    """A learning rate the page may use, or a keyed error (0, 1e9, NaN, text ...), with
    the keys and wording of Train's own learning rate (train_settings.check_settings)."""
    low, high = LR_BOUNDS
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr):
        raise ParameterError("train_setting_type", f"learning_rate must be a number, got "
                             f"{lr!r}", name="learning_rate", value=str(lr))
    if not low <= lr <= high:
        raise ParameterError("train_setting_range", f"learning_rate must be between {low} "
                             f"and {high}, got {lr}", name="learning_rate", value=lr, low=low,
                             high=high)
    return float(lr)


def _check_target(target: object, size: int) -> int:
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < size:
        raise ParameterError("train_setting_range", f"the right answer must be an index 0 .. "
                             f"{size - 1}, got {target!r}", name="target", value=str(target),
                             low=0, high=size - 1)
    return target


def _loss(probs: torch.Tensor, target: int) -> float:
    return float(-torch.log(probs[target]))


def logit_step(target: int = 0, lr: float = DEFAULT_LR,
               logits: Sequence[float] = LOGITS) -> LogitStep:
    """One step z -> z - lr * (p - onehot(target)) and what it does to p."""
    lr = check_lr(lr)
    z = torch.tensor(logits, dtype=torch.float64)  # [V]
    target = _check_target(target, z.shape[0])
    p = torch.softmax(z, -1)  # [V]
    grad = p - torch.nn.functional.one_hot(torch.tensor(target), z.shape[0]).double()  # [V]
    new_z = z - lr * grad  # [V]
    new_p = torch.softmax(new_z, -1)
    return LogitStep(z, p, target, _loss(p, target), grad, lr, new_z, new_p,
                     _loss(new_p, target))


def head_step(target: int = 0, lr: float = DEFAULT_LR, hidden: Sequence[float] = HIDDEN,
              table: Sequence[Sequence[float]] = TABLE) -> HeadStep:
    """One step on the LM head's table E, whose logits are z = h E^T."""
    lr = check_lr(lr)
    h = torch.tensor(hidden, dtype=torch.float64)  # [d]
    e = torch.tensor(table, dtype=torch.float64)  # [V, d]
    target = _check_target(target, e.shape[0])
    z = e @ h  # [V]
    p = torch.softmax(z, -1)
    grad_z = p - torch.nn.functional.one_hot(torch.tensor(target), e.shape[0]).double()  # [V]
    grad_e = torch.outer(grad_z, h)  # [V, d]
    new_e = e - lr * grad_e  # [V, d]
    new_z = new_e @ h  # [V]
    new_p = torch.softmax(new_z, -1)
    return HeadStep(h, e, z, p, target, _loss(p, target), grad_z, grad_e, lr, new_e, new_z,
                    new_p, _loss(new_p, target), float(h @ h))


# --- teacher forcing --------------------------------------------------------------------


@dataclass(frozen=True)
class ForcedPair:
    position: int  # the position that reads
    reads: str  # its character (it also reads every earlier one)
    target: str  # the next character: what it must predict
    in_answer: bool  # the target is one of the answer's characters


@dataclass(frozen=True)
class TeacherForcing:
    example: Example  # the training sequence: question + answer
    pairs: tuple[ForcedPair, ...]  # one per position that has a target


def shortest_training_example() -> Example:
    """The shortest text of the default training split (the first, if several tie)."""
    return min(split_corpus().train, key=lambda ex: len(ex.text))


def teacher_forcing(example: Example | None = None) -> TeacherForcing:
    """Input position -> target, as Train's pairs hold them (next_token_pairs)."""
    example = example or shortest_training_example()
    vocab = vocabulary()
    data = encode_examples([example], vocab)  # inputs [1, L-1], targets [1, L-1]
    pairs = []
    for j, (i, target) in enumerate(zip(data.inputs[0].tolist(), data.targets[0].tolist(),
                                        strict=True)):
        if target == IGNORE:
            continue
        pairs.append(ForcedPair(j, vocab.tokens[i], vocab.tokens[target],
                                j + 1 >= len(example.question)))
    return TeacherForcing(example, tuple(pairs))
