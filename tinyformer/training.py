"""Next-token training, for any model that maps ids [B, N] to (logits [B, N, V], ...).

Token sequences become right-padded (input, target) pairs: the target at position i is
token i + 1, and positions past a sequence's end get the target IGNORE, which
cross-entropy skips. Right padding is safe for a causal model: an earlier position
never reads the padding after it. Each pair also marks its answer (the part after a
prompt), so a loss can be reported over every target token and over the answer's
tokens alone. Also here: a cosine-decaying learning rate and a bounded CPU thread count
for the duration of a run.

TinyDecoder (tinyformer.model) fits; the classroom's own training run
(tinyformer.lessons.train) is built on these pieces.

Shape letters: B sequences, L the longest sequence's length, V vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tinyformer.errors import ParameterError
from tinyformer.tokenizer import PAD_ID

IGNORE = -100  # target value cross_entropy skips (padding)
MAX_THREADS = 64


@dataclass(frozen=True)
class Batches:
    """Sequences as right-padded next-token pairs."""

    inputs: torch.Tensor  # [B, L-1] ids, the padding id after each sequence's end
    targets: torch.Tensor  # [B, L-1] the next id, IGNORE where nothing is to be predicted
    answer: torch.Tensor  # [B, L-1] bool, True where the target is an answer token

    def to(self, device: torch.device | str) -> Batches:
        return Batches(self.inputs.to(device), self.targets.to(device), self.answer.to(device))


def next_token_pairs(
    sequences: Sequence[Sequence[int]], answer_starts: Sequence[int], pad_id: int = PAD_ID
) -> Batches:
    """Right-padded next-token pairs of token sequences (each of at least two ids).

    ``answer_starts[b]``: where sequence b's answer begins (the prompt's length), so its
    answer mask is True from the prompt's last position on: that position predicts the
    answer's first token.
    """
    length = max(len(ids) for ids in sequences)
    inputs = torch.full((len(sequences), length), pad_id, dtype=torch.int64)  # [B, L]
    targets = torch.full((len(sequences), length - 1), IGNORE, dtype=torch.int64)  # [B, L-1]
    answer = torch.zeros(len(sequences), length - 1, dtype=torch.bool)
    for row, (ids, start) in enumerate(zip(sequences, answer_starts, strict=True)):
        row_ids = torch.tensor(list(ids), dtype=torch.int64)
        n = len(row_ids)
        inputs[row, :n] = row_ids
        targets[row, : n - 1] = row_ids[1:]  # target at position i is token i + 1
        answer[row, start - 1 : n - 1] = True
    return Batches(inputs[:, :-1], targets, answer)


def token_losses(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every target token: [B, L-1], 0 where the target is IGNORE."""
    logits = model(inputs)[0]  # [B, L-1, V]
    return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none")


@torch.no_grad()
def mean_losses(model: nn.Module, data: Batches) -> tuple[float, float]:
    """(mean loss over every target token, mean loss over the answers' tokens)."""
    losses = token_losses(model, data.inputs, data.targets)  # [B, L-1]
    real = data.targets != IGNORE
    return float(losses[real].mean()), float(losses[data.answer].mean())


def cosine_lr(base: float, step: int, steps: int) -> float:
    """The learning rate at ``step`` (1..steps): ``base`` at step 1, decaying along half
    a cosine towards 0 at the end: big steps early, then smaller ones that let the
    weights settle."""
    return base * 0.5 * (1 + math.cos(math.pi * (step - 1) / steps))


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` CPU threads (torch's setting is process-wide; it is
    restored afterwards). None leaves the setting alone."""
    if threads is None:
        yield
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 1 <= threads <= MAX_THREADS:
        raise ParameterError(
            "train_threads",
            f"threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}",
            value=str(threads),
        )
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
