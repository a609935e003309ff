"""Where the rule the small model learned stops (stage 13.2): the held-out questions it
gets wrong, and questions outside what its corpus ever showed it: longer than any
training question, a reason phrased as the corpus never phrases one, a character it
never saw. Each is answered by the model (its greedy continuation and P(商家), P(买家));
nothing here is guessed or typed in by hand.

``free_answer`` answers any text the model can read (unknown characters become [UNK]),
not only the corpus's pattern as tinyformer.lessons.probe insists on: here the point is
to see what the model does outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tinyformer.errors import ParameterError
from tinyformer.lessons.answering import evaluate, greedy_answers
from tinyformer.lessons.corpus import all_examples, find_question, split_corpus
from tinyformer.lessons.interventions import word_probs
from tinyformer.lessons.probe import PayerProbs, max_question_length
from tinyformer.lessons.train import TrainedModel

# The cases the page shows; what the model answers is computed.
LONGER = "请问我买的衣服有质量问题，退货运费由谁承担？"  # 22 characters
REORDERED = "衣服质量有问题，运费谁承担？"  # the characters of 有质量问题 in another order
NEGATED = "衣服无质量问题，运费谁承担？"  # "no quality problem": the corpus never negates
UNKNOWN = "电脑有质量问题，运费谁承担？"  # 脑 is not in the vocabulary
CASES = (("longer", LONGER), ("reordered", REORDERED), ("negated", NEGATED),
         ("unknown", UNKNOWN))


@cache
def longest_question() -> int:
    """The most characters any question of the corpus has (training or held out)."""
    return max(len(ex.question) for ex in all_examples())


@dataclass(frozen=True)
class FreeAnswer:
    question: str
    answer: str  # the greedy continuation, as many characters as a corpus answer
    probs: PayerProbs  # P(商家), P(买家)
    unknown: tuple[str, ...]  # characters read as [UNK]
    in_corpus: bool  # the question is one of the corpus's
    heldout: bool  # ... and held out of training (default split)


def free_answer(trained: TrainedModel, question: str) -> FreeAnswer:
    """The model's answer to any text it can hold; empty or too long: a keyed error."""
    if not isinstance(question, str):
        raise ParameterError("trained_question_type", "the question must be text")
    question = question.strip()
    if not question:
        raise ParameterError("trained_question_empty", "the question is empty")
    limit = max_question_length(trained)
    if len(question) > limit:
        raise ParameterError("trained_question_too_long", f"the question has {len(question)} "
                             f"characters; the model reads at most {limit}",
                             length=len(question), limit=limit)
    answer = greedy_answers(trained.model, trained.vocab, [question])[0]
    example = find_question(question)
    return FreeAnswer(question, answer, word_probs(trained, question),
                      trained.vocab.encode(question).unknown, example is not None,
                      example in split_corpus().heldout)


@dataclass(frozen=True)
class Miss:
    question: str
    expected: str  # the corpus's answer
    answer: str  # the model's greedy answer
    probs: PayerProbs


def heldout_misses(trained: TrainedModel) -> tuple[Miss, ...]:
    """The held-out questions (default split) whose greedy answer names the wrong payer."""
    ev = evaluate(trained.model, trained.vocab, split_corpus().heldout)
    return tuple(Miss(q, expected, answer, word_probs(trained, q))
                 for q, expected, answer in ev.wrong)


def cases(trained: TrainedModel) -> tuple[tuple[str, FreeAnswer], ...]:
    return tuple((kind, free_answer(trained, q)) for kind, q in CASES)
