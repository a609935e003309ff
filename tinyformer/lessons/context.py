"""One word, two sentences: the same input row leaves attention as two different rows.

The running example's 运费 is looked up in one embedding table, so it enters attention
as the same row in 「商品有质量问题，运费谁承担？」 and in 「无理由退货，运费谁承担？」. With
the same W_q, W_k, W_v and a causal mask it reads itself and the words before it, and
those differ, so its output rows differ. The output is sum_j a_j v_j; the difference
of the two outputs splits exactly into one share per word:

- a word read in both sentences has the same v row in both (same embedding, same W_v,
  no positions added), so its share is (a_j in a - a_j in b) · v_j: its weight moved;
- a word read in only one sentence brings its whole contribution a_j v_j (with a minus
  sign when it is in sentence b).

No position embeddings are added here (positions are a later stage): they would make
the two input rows differ by their position rows and hide the point. The weights are
seeded random teaching data, never a reason for an answer.

``compare_trained`` follows one character (the trained model reads characters, so 费
stands for 运费) through the trained model in two questions: its token row, its
position row, the block input, and after each block what attention added and the
block's output; and, from every block and head, its attention row with the share that
lands on the reason's characters, the item's and the rest (the spans of
tinyformer.lessons.probe). Shares say where a head read, not why the model answers.

Shape letters: V vocabulary, N positions, d width (w in the trained model), L blocks,
H heads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.attention import AttentionTrace, scaled_dot_product_attention
from tinyformer.errors import ParameterError
from tinyformer.lessons.probe import PayerProbs, Shares, probe, row_shares
from tinyformer.lessons.projection import random_setup
from tinyformer.lessons.train import TrainedModel
from tinyformer.masks import causal_mask

MAX_WIDTH = 16  # bounds the width a learner can ask for
MAX_WORDS = 32  # bounds each sentence
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class Reading:
    """What one word reads in one sentence (its row of the causal attention)."""

    words: tuple[str, ...]  # [N] the sentence's tokens
    at: int  # the word's position (its first occurrence)
    x: torch.Tensor  # [N, d] input rows: embedding rows, no positions
    q: torch.Tensor  # [N, d] X W_q
    k: torch.Tensor  # [N, d] X W_k
    v: torch.Tensor  # [N, d] X W_v
    attention: AttentionTrace  # the whole sentence's causal attention, [N, N] tables
    scores: torch.Tensor  # [N] the word's masked scaled scores (-inf after `at`)
    weights: torch.Tensor  # [N] the word's attention row (0 after `at`)
    contributions: torch.Tensor  # [N, d] weights[j] * v[j]
    output: torch.Tensor  # [d] the word's output row: contributions summed

    @property
    def read(self) -> tuple[str, ...]:
        """The words it may read: itself and those before it."""
        return self.words[: self.at + 1]

    @property
    def input_row(self) -> torch.Tensor:
        """[d] the word's own input row."""
        return self.x[self.at]


@dataclass(frozen=True)
class ContextComparison:
    """One word in two sentences, with one table and one set of weights."""

    word: str
    vocab: tuple[str, ...]  # [V] the words of both sentences, first occurrence first
    table: torch.Tensor  # [V, d] embedding table (seeded random, rounded)
    w_q: torch.Tensor  # [d, d]
    w_k: torch.Tensor  # [d, d]
    w_v: torch.Tensor  # [d, d]
    a: Reading
    b: Reading
    input_gap: torch.Tensor  # [d] the word's input row in a minus in b
    inputs_differ: int  # how many of its d input numbers differ (0: one lookup)
    difference: torch.Tensor  # [d] a.output - b.output
    share_words: tuple[str, ...]  # [W] every word either sentence lets it read
    shares: torch.Tensor  # [W, d] each word's part of `difference`; rows sum to it
    share_weights: torch.Tensor  # [W, 2] the word's summed weight in a and in b
    share_values: torch.Tensor  # [W, d] the word's value row (the same in a and b)


def compare_in_context(words_a: Sequence[str], words_b: Sequence[str], word: str,
                       width: int, seed: int) -> ContextComparison:
    """Run causal attention over both sentences with the same seeded embedding table
    and projections [width, width] (float64, rounded to 2 decimals) and compare `word`.
    """
    words_a, words_b = _checked(words_a, word), _checked(words_b, word)
    if not _whole_in(width, 1, MAX_WIDTH):
        raise ParameterError("context_width", f"width must be a whole number from 1 to "
                             f"{MAX_WIDTH}, got {width!r}", value=width, lo=1, hi=MAX_WIDTH)
    if not _whole_in(seed, 0, MAX_SEED):
        raise ParameterError("context_seed", f"seed must be a whole number from 0 to "
                             f"{MAX_SEED}, got {seed!r}", value=seed, lo=0, hi=MAX_SEED)
    vocab = tuple(dict.fromkeys(words_a + words_b))
    setup = random_setup(len(vocab), width, width, torch.Generator().manual_seed(seed))
    row_of = {w: i for i, w in enumerate(vocab)}
    a, b = (_reading(words, word, setup, row_of) for words in (words_a, words_b))
    gap = a.x[a.at] - b.x[b.at]  # [d]
    share_words, shares, share_weights = _shares(a, b)
    share_values = setup.x[[row_of[w] for w in share_words]] @ setup.w_v  # [W, d]
    return ContextComparison(
        word, vocab, setup.x, setup.w_q, setup.w_k, setup.w_v, a, b, gap,
        int((gap != 0).sum()), a.output - b.output, share_words, shares, share_weights,
        share_values,
    )


def _reading(words: tuple[str, ...], word: str, setup, row_of: dict[str, int]) -> Reading:
    x = setup.x[[row_of[w] for w in words]]  # [N, d] a lookup: one row per token
    q, k, v = x @ setup.w_q, x @ setup.w_k, x @ setup.w_v  # [N, d] each
    attention = scaled_dot_product_attention(q, k, v, mask=causal_mask(len(words)))
    at = words.index(word)
    weights = attention.weights[at]  # [N]
    contributions = weights[:, None] * v  # [N, d]
    return Reading(words, at, x, q, k, v, attention, attention.masked[at], weights,
                   contributions, contributions.sum(0))


def _shares(a: Reading, b: Reading) -> tuple[tuple[str, ...], torch.Tensor, torch.Tensor]:
    """Each readable word's part of a.output - b.output, and its weight in each."""
    words = tuple(dict.fromkeys(a.read + b.read))
    shares = torch.zeros(len(words), a.output.shape[0], dtype=a.output.dtype)  # [W, d]
    weights = torch.zeros(len(words), 2, dtype=a.output.dtype)  # [W, 2]
    for sign, side, reading in ((1.0, 0, a), (-1.0, 1, b)):
        for j, w in enumerate(reading.read):  # a repeated word adds all its positions
            shares[words.index(w)] += sign * reading.contributions[j]
            weights[words.index(w), side] += reading.weights[j]
    return words, shares, weights


def _checked(words: Sequence[str], word: str) -> tuple[str, ...]:
    words = tuple(words)
    if not 1 <= len(words) <= MAX_WORDS:
        raise ParameterError("context_length", f"a sentence needs 1 to {MAX_WORDS} tokens, "
                             f"got {len(words)}", n=len(words), limit=MAX_WORDS)
    if word not in words:
        raise ParameterError("context_word_missing", f"{word!r} is not in {''.join(words)!r}",
                             word=word)
    return words


def _whole_in(value: object, lo: int, hi: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and lo <= value <= hi


# --- The trained model: one character followed through every block -------------------


@dataclass(frozen=True)
class TrainedReading:
    """One character of one question, followed through the trained model."""

    question: str
    tokens: tuple[str, ...]  # [N] one character per token
    at: int  # the followed character's position (its first occurrence)
    reason: tuple[int, ...]  # positions of the reason's characters
    item: tuple[int, ...]  # positions of the item's characters (empty: no item named)
    rows: torch.Tensor  # [S, w] its row at each stage of TrainedComparison.stages
    scores: torch.Tensor  # [L * H, N] its masked scaled scores, block by block, head by head
    weights: torch.Tensor  # [L * H, N] its attention rows (0 after `at`)
    shares: tuple[Shares, ...]  # [L * H] each row's weight on reason, item and the rest
    even: Shares  # what an even spread over the at + 1 readable positions would give
    answer_probs: PayerProbs  # P(商), P(买) at the answering position (tinyformer.lessons.probe)

    @property
    def reason_text(self) -> str:
        """The reason's characters: 有质量问题."""
        return "".join(self.tokens[j] for j in self.reason)


@dataclass(frozen=True)
class TrainedComparison:
    """One character in two questions, through the same trained model."""

    char: str
    stages: tuple[tuple[str, int | None], ...]  # [S] ("token", None) ... ("block", 1)
    a: TrainedReading
    b: TrainedReading
    differ: tuple[int, ...]  # [S] how many of the w numbers of its row differ, per stage
    largest: tuple[float, ...]  # [S] the largest |a - b| of its row, per stage
    heads: int  # H

    @property
    def block_heads(self) -> tuple[tuple[int, int], ...]:
        """[L * H] (block, head) of each attention row, 0-based, in the rows' order."""
        return tuple(divmod(r, self.heads) for r in range(self.a.weights.shape[0]))

    @property
    def same_position(self) -> bool:
        """Same position, same position row: then the block inputs are equal too."""
        return self.a.at == self.b.at


def compare_trained(trained: TrainedModel, question_a: str, question_b: str,
                    char: str) -> TrainedComparison:
    """Follow `char` through the trained model in both questions (each one of the
    corpus's questions: tinyformer.lessons.probe refuses the others with a keyed error)."""
    a, b = (_trained_reading(trained, q, char) for q in (question_a, question_b))
    gaps = (a.rows - b.rows).abs()  # [S, w]
    layers = len(trained.model.blocks)
    stages = (("token", None), ("position", None), ("input", None),
              *((kind, block) for block in range(layers) for kind in ("attention", "block")))
    return TrainedComparison(char, stages, a, b, tuple(int(n) for n in (gaps > 0).sum(-1)),
                             tuple(float(g) for g in gaps.amax(-1)), trained.model.heads)


def _trained_reading(trained: TrainedModel, question: str, char: str) -> TrainedReading:
    if len(char) != 1 or char not in question:
        raise ParameterError("context_word_missing", f"{char!r} is not in {question!r}",
                             word=char)
    inspection = probe(trained, question)  # checks the question, finds the reason's span
    at = question.index(char)
    trace = trained.model.trace(torch.tensor(inspection.ids))
    rows = [trace.token_rows[0, at], trace.position_rows[at], trace.x0[0, at]]
    for block in trace.blocks:
        rows += [block.attention.output[0, at], block.resid2[0, at]]  # [w] each
    scores = torch.cat([blk.attention.masked[0, :, at] for blk in trace.blocks])  # [L * H, N]
    weights = torch.cat([blk.attention.weights[0, :, at] for blk in trace.blocks])
    reason, item = inspection.reason_positions, inspection.item_positions
    even = torch.zeros(len(question)).index_fill_(0, torch.arange(at + 1), 1 / (at + 1))
    return TrainedReading(
        question, inspection.tokens, at, reason, item, torch.stack(rows).cpu(), scores.cpu(),
        weights.cpu(), tuple(row_shares(w, reason, item) for w in weights.cpu()),
        row_shares(even, reason, item), inspection.first_token)


