"""Looking inside the trained model: its attention, its answer, and where it looked.

For one question of the corpus's pattern this computes, from the model itself:
- every block's and head's attention weights;
- the next-token probabilities of 商 and 买 at the answering position (the question's
  last token, whose output predicts the answer's first token), and of the whole words
  商家 and 买家 (first character times second, by the chain rule);
- the greedy answer and the payer it names;
- per block and head, the share of the answering position's attention that falls on
  the reason's characters, on the item's characters, and on everything else, beside
  the shares an evenly spread row would give.
The shares say where a head read, not why the model answered: attention weights are
one part of the computation (values, residuals and the FFN carry the rest).

A question outside the pattern the model was trained on (empty, too long, with a
character it never saw, or not one of the corpus's questions) raises a keyed error
rather than produce an answer that would only be a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons.corpus import PAYER_WORDS, Example, Payer, find_question
from tinyformer.lessons.train import ANSWER_LENGTH, TrainedModel, greedy_answers, payer_named


class PayerProbs(NamedTuple):
    merchant: float  # 商 (first token) or 商家 (whole word)
    buyer: float  # 买 or 买家


class Shares(NamedTuple):
    """Parts of one attention row (they sum to 1)."""

    reason: float
    item: float
    rest: float


@dataclass(frozen=True)
class HeadShare:
    block: int  # 0-based
    head: int  # 0-based
    shares: Shares  # of the answering position's row


@dataclass(frozen=True)
class Inspection:
    question: str
    example: Example  # the corpus's example with this question (its item, reason, payer)
    tokens: tuple[str, ...]  # [N] one character per token
    ids: tuple[int, ...]  # [N]
    answer_position: int  # N - 1: its output predicts the answer's first token
    attention: torch.Tensor  # [L, H, N, N] every block's weights, row = the reading position
    reason_positions: tuple[int, ...]
    item_positions: tuple[int, ...]  # empty when the phrasing names no item
    heads: tuple[HeadShare, ...]  # [L * H] block by block, head by head
    uniform: Shares  # what a row spread evenly over the N positions would give
    first_token: PayerProbs  # P(商 | question), P(买 | question)
    word: PayerProbs  # P(商家 | question), P(买家 | question)
    greedy_answer: str  # argmax continuation, ANSWER_LENGTH tokens
    predicted: Payer | None  # payer named by greedy_answer (None: neither)

    @property
    def expected(self) -> Payer:
        return self.example.payer


def max_question_length(trained: TrainedModel) -> int:
    """Longest question the model can read and still write a whole answer after."""
    return trained.model.max_length - ANSWER_LENGTH + 1


def check_question(trained: TrainedModel, question: str) -> Example:
    """The corpus example behind this question, or a keyed error saying what is wrong."""
    limit = max_question_length(trained)
    if not question:
        raise ParameterError("trained_question_empty", "the question is empty")
    if len(question) > limit:
        raise ParameterError(
            "trained_question_too_long",
            f"the question has {len(question)} characters; the model reads at most {limit}",
            length=len(question),
            limit=limit,
        )
    unknown = trained.vocab.encode(question).unknown
    if unknown:
        chars = "".join(unknown)
        raise ParameterError(
            "trained_question_unknown",
            f"the model never saw these characters in training: {chars}",
            chars=chars,
        )
    example = find_question(question)
    if example is None:
        raise ParameterError(
            "trained_question_pattern",
            f"{question!r} is not one of the questions the model was trained on (same "
            f"phrasings, items and reasons); it would only guess",
            question=question,
        )
    return example


def probe(trained: TrainedModel, question: str) -> Inspection:
    """Run the trained model on one question; leading and trailing spaces are ignored."""
    if not isinstance(question, str):
        raise ParameterError("trained_question_type", "the question must be text")
    question = question.strip()
    example = check_question(trained, question)
    model, vocab = trained.model, trained.vocab
    ids = vocab.encode(question).ids
    trace = model.trace(torch.tensor(ids))
    attention = torch.stack([block.attention.weights[0] for block in trace.blocks])  # [L, H, N, N]
    reason = tuple(range(*example.reason_span))
    item = tuple(range(*example.item_span)) if example.item_span else ()
    answer = greedy_answers(model, vocab, [question])[0]
    first, word = _payer_probs(trained, ids)
    return Inspection(
        question=question,
        example=example,
        tokens=tuple(question),
        ids=tuple(ids),
        answer_position=len(ids) - 1,
        attention=attention,
        reason_positions=reason,
        item_positions=item,
        heads=_head_shares(attention[:, :, -1, :], reason, item),
        uniform=row_shares(torch.full((len(ids),), 1 / len(ids)), reason, item),
        first_token=first,
        word=word,
        greedy_answer=answer,
        predicted=payer_named(answer),
    )


def _payer_probs(trained: TrainedModel, ids: tuple[int, ...]) -> tuple[PayerProbs, PayerProbs]:
    """P(first character) and P(whole word) for 商家 and 买家 after the question."""
    vocab = trained.vocab
    words = [PAYER_WORDS["merchant"], PAYER_WORDS["buyer"]]
    word_ids = [vocab.encode(w).ids for w in words]  # [2][2]
    batch = torch.tensor([[*ids, w[0]] for w in word_ids])  # [2, N + 1]: question + 商 / 买
    with torch.no_grad():
        logits, _ = trained.model(batch)  # [2, N + 1, V]
    probs = logits.softmax(-1)
    n = len(ids)
    first = [float(probs[0, n - 1, w[0]]) for w in word_ids]  # row 0 and 1 agree up to n - 1
    second = [float(probs[row, n, w[1]]) for row, w in enumerate(word_ids)]  # P(家 | q, 商/买)
    return PayerProbs(*first), PayerProbs(*(f * s for f, s in zip(first, second, strict=True)))


def _head_shares(
    rows: torch.Tensor, reason: tuple[int, ...], item: tuple[int, ...]
) -> tuple[HeadShare, ...]:
    """rows [L, H, N]: each head's answering row."""
    return tuple(
        HeadShare(block, head, row_shares(rows[block, head], reason, item))
        for block in range(rows.shape[0])
        for head in range(rows.shape[1])
    )


def row_shares(row: torch.Tensor, reason: Sequence[int], item: Sequence[int]) -> Shares:
    """row [N]: the weight on the reason's positions, the item's, and all others."""
    others = [i for i in range(row.shape[0]) if i not in reason and i not in item]
    return Shares(
        float(row[list(reason)].sum()), float(row[list(item)].sum()), float(row[others].sum())
    )
