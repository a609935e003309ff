"""Why attention needs positions: without them it cannot tell word orders apart.

Attention without a mask is permutation-equivariant: shuffle the input rows and the
output rows come out shuffled the same way, each with the same numbers. So
「我吃苹果」 and 「苹果吃我」 give the same set of output rows, one per word. Adding a
position row to each input (sinusoidal here) breaks this: a word now enters with a
different row at a different place, and its output changes.

No mask is used: a causal mask is itself a use of word order (who may read whom).
The embedding table and W_q, W_k, W_v are seeded random teaching data
(``projection.random_setup``), the same for both orders.

Shape letters: V vocabulary, N positions, d width.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.attention import AttentionTrace, scaled_dot_product_attention
from tinyformer.errors import ParameterError
from tinyformer.lessons.projection import random_setup
from tinyformer.positional import sinusoidal

MAX_WIDTH = 16
MAX_WORDS = 6  # 6! = 720 orders at most
MAX_SEED = 2**31 - 1
MATCH_TOLERANCE = 1e-12  # summing in another order may change the last binary digits


@dataclass(frozen=True)
class OrderRun:
    """One word order through attention."""

    words: tuple[str, ...]  # [N]
    embedded: torch.Tensor  # [N, d] the words' embedding rows
    positions: torch.Tensor  # [N, d] position rows added (zeros without positions)
    x: torch.Tensor  # [N, d] embedded + positions: attention's input
    v: torch.Tensor  # [N, d] x W_v
    attention: AttentionTrace  # [N, N] tables; output [N, d]

    @property
    def output(self) -> torch.Tensor:
        return self.attention.output  # [N, d]


@dataclass(frozen=True)
class ShuffleComparison:
    """The same words in two orders, with one embedding table and one set of weights."""

    order: tuple[int, ...]  # shuffled position p holds the word from position order[p]
    with_positions: bool
    table: torch.Tensor  # [V, d]
    w_q: torch.Tensor  # [d, d]
    w_k: torch.Tensor  # [d, d]
    w_v: torch.Tensor  # [d, d]
    first: OrderRun
    second: OrderRun
    gap: torch.Tensor  # [N, d] row p: first.output[p] minus the same word's row in second
    largest_gap: float
    rows_match: bool  # largest_gap <= MATCH_TOLERANCE: the rows only moved


def shuffles(n: int) -> list[tuple[int, ...]]:
    """Every order of n words except the original one, in lexicographic order."""
    _check_length(n)
    return [p for p in itertools.permutations(range(n)) if p != tuple(range(n))]


def compare_orders(words: Sequence[str], order: Sequence[int], width: int, seed: int,
                   with_positions: bool = False) -> ShuffleComparison:
    """Run the words in their order and in `order` through unmasked attention.

    order: a permutation of 0..N-1; the second sentence is [words[i] for i in order].
    with_positions: add the sinusoidal rows PE[0..N-1] to each sentence's inputs.
    """
    words, order = tuple(words), tuple(order)
    _check_length(len(words))
    if sorted(order) != list(range(len(words))):
        raise ParameterError("order_not_permutation", f"{order} does not reorder "
                             f"{len(words)} words", order=list(order), n=len(words))
    if _outside(width, 1, MAX_WIDTH):
        raise ParameterError("order_width", f"width must be a whole number from 1 to "
                             f"{MAX_WIDTH}, got {width!r}", value=width, lo=1, hi=MAX_WIDTH)
    if _outside(seed, 0, MAX_SEED):
        raise ParameterError("order_seed", f"seed must be a whole number from 0 to "
                             f"{MAX_SEED}, got {seed!r}", value=seed, lo=0, hi=MAX_SEED)
    vocab = tuple(dict.fromkeys(words))
    setup = random_setup(len(vocab), width, width, torch.Generator().manual_seed(seed))
    pe = sinusoidal(len(words), width, dtype=torch.float64)  # [N, d]
    if not with_positions:
        pe = torch.zeros_like(pe)
    first = _run(words, vocab, setup, pe)
    second = _run(tuple(words[i] for i in order), vocab, setup, pe)
    where = torch.tensor([order.index(p) for p in range(len(words))])  # [N] new place
    gap = first.output - second.output[where]  # [N, d]
    largest = float(gap.abs().max())
    return ShuffleComparison(order, with_positions, setup.x, setup.w_q, setup.w_k, setup.w_v,
                             first, second, gap, largest, largest <= MATCH_TOLERANCE)


def _run(words: tuple[str, ...], vocab: tuple[str, ...], setup, pe: torch.Tensor) -> OrderRun:
    embedded = setup.x[[vocab.index(w) for w in words]]  # [N, d] a lookup per word
    x = embedded + pe  # [N, d]
    q, k, v = x @ setup.w_q, x @ setup.w_k, x @ setup.w_v  # [N, d] each
    return OrderRun(words, embedded, pe, x, v, scaled_dot_product_attention(q, k, v))


def _check_length(n: int) -> None:
    if _outside(n, 2, MAX_WORDS):
        raise ParameterError("order_words", f"need 2 to {MAX_WORDS} words, got {n!r}",
                             value=n, lo=2, hi=MAX_WORDS)


def _outside(value: int, lo: int, hi: int) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi
