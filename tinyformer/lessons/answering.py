"""The model's answers: greedy continuations, the payer they name, held-out accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons.corpus import ANSWER, PAYER_WORDS, Example, Payer
from tinyformer.model import TinyDecoder
from tinyformer.tokenizer import CharVocab

ANSWER_LENGTH = len(ANSWER.format(payer=PAYER_WORDS["merchant"]))  # 5: 商家承担。


@dataclass(frozen=True)
class Evaluation:
    """Greedy answers to questions: right when the answer names the right payer."""

    n: int
    correct: int  # the greedy continuation starts with the right payer (商家 / 买家)
    exact: int  # the greedy continuation is the whole expected answer (商家承担。)
    wrong: tuple[tuple[str, str, str], ...]  # (question, expected answer, greedy answer)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0


def payer_named(answer: str) -> Payer | None:
    """The payer an answer starts with: 商家 -> merchant, 买家 -> buyer, else None."""
    for payer, word in PAYER_WORDS.items():
        if answer.startswith(word):
            return payer  # type: ignore[return-value]
    return None


@torch.no_grad()
def greedy_answers(
    model: TinyDecoder, vocab: CharVocab, questions: Sequence[str], n_new: int = ANSWER_LENGTH
) -> list[str]:
    """Each question continued by n_new argmax tokens (questions of one length batched)."""
    answers: dict[int, str] = {}
    by_length: dict[int, list[int]] = {}
    for i, question in enumerate(questions):
        by_length.setdefault(len(question), []).append(i)
    for length, rows in by_length.items():
        if length == 0:
            raise ParameterError("trained_question_empty", "a question is empty")
        if length + n_new - 1 > model.max_length:
            raise ParameterError(
                "train_answer_too_long",
                f"a {length}-character question plus {n_new} new tokens exceeds the "
                f"model's {model.max_length} positions",
                length=length,
                n_new=n_new,
                limit=model.max_length,
            )
        # [b, n] on the model's device: the argmax below comes back on it
        ids = torch.tensor([vocab.encode(questions[i]).ids for i in rows], device=model.device)
        for _ in range(n_new):
            logits, _ = model(ids)  # [b, n, V]
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        for i, row in zip(rows, ids[:, length:].tolist(), strict=True):
            answers[i] = vocab.decode(row)
    return [answers[i] for i in range(len(questions))]


def evaluate(model: TinyDecoder, vocab: CharVocab, examples: Sequence[Example]) -> Evaluation:
    """Greedy-answer every example; count answers naming the right payer."""
    answers = greedy_answers(model, vocab, [ex.question for ex in examples])
    correct = exact = 0
    wrong = []
    for ex, answer in zip(examples, answers, strict=True):
        right = payer_named(answer) == ex.payer
        correct += right
        exact += answer == ex.answer
        if not right:
            wrong.append((ex.question, ex.answer, answer))
    return Evaluation(len(examples), correct, exact, tuple(wrong))
