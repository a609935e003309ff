"""The corpus as next-token training pairs, and the losses measured on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tinyformer.corpus import Example
from tinyformer.model import TinyDecoder
from tinyformer.tokenizer import PAD_ID, CharVocab

IGNORE = -100  # target value cross_entropy skips (padding)


@dataclass(frozen=True)
class Batches:
    """Examples as right-padded next-token pairs."""

    inputs: torch.Tensor  # [B, L-1] ids, PAD_ID after each text's end
    targets: torch.Tensor  # [B, L-1] the next id, IGNORE where nothing is to be predicted
    answer: torch.Tensor  # [B, L-1] bool, True where the target is an answer token

    def to(self, device: torch.device) -> Batches:
        return Batches(self.inputs.to(device), self.targets.to(device), self.answer.to(device))


def encode_examples(examples: Sequence[Example], vocab: CharVocab) -> Batches:
    """Right padding: a causal model's earlier positions never see the padding after them."""
    length = max(len(ex.text) for ex in examples)
    ids = torch.full((len(examples), length), PAD_ID, dtype=torch.int64)  # [B, L]
    targets = torch.full((len(examples), length - 1), IGNORE, dtype=torch.int64)  # [B, L-1]
    answer = torch.zeros(len(examples), length - 1, dtype=torch.bool)
    for row, ex in enumerate(examples):
        text_ids = torch.tensor(vocab.encode(ex.text).ids)
        n = len(text_ids)
        ids[row, :n] = text_ids
        targets[row, : n - 1] = text_ids[1:]  # target at position i is token i + 1
        answer[row, len(ex.question) - 1 : n - 1] = True  # from the question's last token on
    return Batches(ids[:, :-1], targets, answer)


def token_losses(model: TinyDecoder, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every target token: [B, L-1], 0 where the target is IGNORE."""
    logits, _ = model(inputs)  # [B, L-1, V]
    return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none")


@torch.no_grad()
def heldout_losses(model: TinyDecoder, data: Batches) -> tuple[float, float]:
    """(mean loss over every target token, mean loss over the answers' tokens)."""
    losses = token_losses(model, data.inputs, data.targets)  # [B, L-1]
    real = data.targets != IGNORE
    return float(losses[real].mean()), float(losses[data.answer].mean())
