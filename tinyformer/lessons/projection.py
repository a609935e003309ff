"""Q, K and V: three projections of the same rows X.

q = x W_q, k = x W_k, v = x W_v; for a whole sequence Q = X W_q, K = X W_k, V = X W_v.
Q and K decide how positions are compared (the score table Q K^T); V decides what is
passed on. The "no projection" variant uses X itself for all three, so the score table
is X X^T: symmetric, with each row's squared length on the diagonal.

Why mix rows at all: a per-row projection sees one row and nothing else, so a word has
the same q, k and v in every sentence (``in_context``); an average over each position's
prefix (positions <= i, the rows a next-word predictor may read) mixes the rows, but with
the same weight 1/(i + 1) on each of them, whatever the position's query
(``prefix_average``).

Shape letters: N positions, d model width, d_k query/key width, d_v value width.
Weights are [d_in, d_out] and applied as ``x @ W``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError, ShapeError

MAX_RANDOM_SIZE = 64  # bounds the random teaching example (positions, widths)


@dataclass(frozen=True)
class QKVTrace:
    """Every step of Q = X W_q, K = X W_k, V = X W_v and the raw score table Q K^T."""

    x: torch.Tensor  # [..., N, d]
    w_q: torch.Tensor | None  # [d, d_k]; None when X itself is used
    w_k: torch.Tensor | None  # [d, d_k]
    w_v: torch.Tensor | None  # [d, d_v]
    q: torch.Tensor  # [..., N, d_k]
    k: torch.Tensor  # [..., N, d_k]
    v: torch.Tensor  # [..., N, d_v]
    scores: torch.Tensor  # [..., N, N] q_i · k_j, not yet scaled
    symmetric: bool  # scores[i, j] == scores[j, i] for every pair
    best_key: torch.Tensor  # [..., N] long: the key each query scores highest (first on ties)
    self_best: torch.Tensor  # [..., N] bool: no key scores higher than the query's own position
    projected: bool  # False for the "X itself" variant


def project_qkv(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> QKVTrace:
    """Q = X W_q, K = X W_k, V = X W_v with three separate matrices, and Q K^T.

    x [..., N, d]; w_q, w_k [d, d_k]; w_v [d, d_v].
    """
    _check(x, w_q, w_k, w_v)
    q = x @ w_q  # [..., N, d_k]
    k = x @ w_k  # [..., N, d_k]
    v = x @ w_v  # [..., N, d_v]
    return _trace(x, w_q, w_k, w_v, q, k, v, projected=True)


def identity_qkv(x: torch.Tensor) -> QKVTrace:
    """No projections: X itself is used as Q, K and V, so the score table is X X^T."""
    if x.dim() < 2:
        raise ShapeError(
            "projection_x_not_2d",
            f"x needs shape [..., N, d], got {list(x.shape)}",
            shape=list(x.shape),
        )
    return _trace(x, None, None, None, x, x, x, projected=False)


def _trace(x, w_q, w_k, w_v, q, k, v, *, projected: bool) -> QKVTrace:
    scores = q @ k.transpose(-2, -1)  # [..., N, N]
    scale = float(scores.abs().max()) if scores.numel() else 0.0
    tol = 1e-9 * max(1.0, scale)
    symmetric = bool(torch.allclose(scores, scores.transpose(-2, -1), rtol=0.0, atol=tol))
    diagonal = scores.diagonal(dim1=-2, dim2=-1)  # [..., N]
    self_best = diagonal >= scores.amax(dim=-1) - tol  # [..., N]
    return QKVTrace(
        x=x, w_q=w_q, w_k=w_k, w_v=w_v, q=q, k=k, v=v, scores=scores,
        symmetric=symmetric, best_key=scores.argmax(dim=-1), self_best=self_best,
        projected=projected,
    )


def _check(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor) -> None:
    """Clear messages for the mismatches a learner can produce by editing matrices."""
    if x.dim() < 2:
        raise ShapeError(
            "projection_x_not_2d",
            f"x needs shape [..., N, d], got {list(x.shape)}",
            shape=list(x.shape),
        )
    d = x.shape[-1]
    for name, w in (("W_q", w_q), ("W_k", w_k), ("W_v", w_v)):
        if w.dim() != 2 or w.shape[0] != d:
            raise ShapeError(
                "projection_weight_rows",
                f"{name} must have {d} rows (the width of x), got shape {list(w.shape)}",
                name=name,
                d=d,
                shape=list(w.shape),
            )
    if w_q.shape[1] != w_k.shape[1]:
        raise ShapeError(
            "projection_qk_width",
            f"W_q and W_k must give the same width d_k, got {w_q.shape[1]} and {w_k.shape[1]}",
            q_width=w_q.shape[1],
            k_width=w_k.shape[1],
        )


class RandomSetup(NamedTuple):
    """A random teaching example: embeddings X and three projection matrices."""

    x: torch.Tensor  # [N, d]
    w_q: torch.Tensor  # [d, d_k]
    w_k: torch.Tensor  # [d, d_k]
    w_v: torch.Tensor  # [d, d_k]


def random_setup(
    n: int, d: int, d_k: int, generator: torch.Generator, decimals: int = 2
) -> RandomSetup:
    """Untrained random X [n, d] ~ N(0, 1) and W_q, W_k, W_v [d, d_k] ~ N(0, 1/d).

    The 1/d variance keeps the entries of Q, K and V near unit size. Values are rounded
    to ``decimals`` so a learner can redo a product by hand. Teaching data only.
    """
    for name, value in (("n", n), ("d", d), ("d_k", d_k)):
        if not 1 <= value <= MAX_RANDOM_SIZE:
            raise ParameterError(
                "projection_size",
                f"{name} must be between 1 and {MAX_RANDOM_SIZE}, got {value}",
                name=name,
                value=value,
                limit=MAX_RANDOM_SIZE,
            )

    def draw(*shape: int, std: float = 1.0) -> torch.Tensor:
        values = torch.randn(*shape, generator=generator, dtype=torch.float64) * std
        return torch.round(values, decimals=decimals)

    std = d**-0.5
    x = draw(n, d)
    return RandomSetup(x, draw(d, d_k, std=std), draw(d, d_k, std=std), draw(d, d_k, std=std))


def most_asymmetric_pair(scores: torch.Tensor) -> tuple[int, int]:
    """(i, j) with the largest gap scores[i, j] - scores[j, i] >= 0 (first on ties).

    scores [N, N]. For a symmetric table every gap is 0 and the answer is (0, 1) when
    N > 1 (the first off-diagonal pair), else (0, 0).
    """
    if scores.dim() != 2 or scores.shape[0] != scores.shape[1]:
        raise ShapeError(
            "projection_scores_square",
            f"scores must be a square [N, N] table, got {list(scores.shape)}",
            shape=list(scores.shape),
        )
    n = scores.shape[0]
    if n < 2:
        return 0, 0
    gap = scores - scores.transpose(0, 1)  # [N, N]; gap[i, j] = -gap[j, i]
    gap = gap.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    if float(gap.max()) <= 0:
        return 0, 1
    flat = int(gap.argmax())
    return flat // n, flat % n


def random_mha_setup(
    n: int, width: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Untrained random X [1, n, width] ~ N(0, 1) and W_q, W_k, W_v, W_o [width, width]
    ~ N(0, 1/width), in that order from `generator`: the multi-head stage's example.
    Teaching data only."""
    for name, value in (("n", n), ("width", width)):
        if not 1 <= value <= MAX_RANDOM_SIZE:
            raise ParameterError(
                "projection_size",
                f"{name} must be between 1 and {MAX_RANDOM_SIZE}, got {value}",
                name=name,
                value=value,
                limit=MAX_RANDOM_SIZE,
            )
    x = torch.randn(1, n, width, generator=generator, dtype=torch.float64)  # [1, n, width]
    w_q, w_k, w_v, w_o = (
        torch.randn(width, width, generator=generator, dtype=torch.float64) / width**0.5
        for _ in range(4)
    )
    return x, w_q, w_k, w_v, w_o


# --- Why mix rows at all: one word in two sentences ----------------------------------------


def prefix_average(v: torch.Tensor) -> torch.Tensor:
    """[..., N, d_v] -> [..., N, d_v]: position i receives the mean of the value rows
    0..i (its prefix, itself included), i.e. causal attention with the same weight
    1/(i + 1) on every key it may read, whatever its query."""
    if v.dim() < 2 or v.shape[-2] == 0:
        raise ShapeError(
            "projection_x_not_2d",
            f"v needs shape [..., N, d_v] with N >= 1, got {list(v.shape)}",
            shape=list(v.shape),
        )
    return prefix_weights(v.shape[-2], v.dtype) @ v  # [N, N] @ [..., N, d_v]


def prefix_weights(n: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """[N, N]: row i holds 1/(i + 1) at columns 0..i and 0 after them (lower triangle)."""
    allowed = torch.ones(n, n, dtype=dtype).tril()  # [N, N] 1 where j <= i
    return allowed / allowed.sum(dim=-1, keepdim=True)  # [N, N] each row sums to 1


def word_rows(
    words: Sequence[str],
    known: Mapping[str, torch.Tensor],
    d: int,
    generator: torch.Generator,
    decimals: int = 1,
) -> dict[str, torch.Tensor]:
    """One input row [d] per distinct word: `known` rows as given, every other word a
    row drawn from N(0, 1) (rounded to `decimals`), in order of first appearance.

    A stand-in for an embedding table; the drawn rows are teaching data only.
    """
    if not 1 <= d <= MAX_RANDOM_SIZE:
        raise ParameterError(
            "projection_size",
            f"d must be between 1 and {MAX_RANDOM_SIZE}, got {d}",
            name="d",
            value=d,
            limit=MAX_RANDOM_SIZE,
        )
    for word, row in known.items():
        if tuple(row.shape) != (d,):
            raise ShapeError(
                "projection_word_width",
                f"the row of {word!r} has shape {list(row.shape)}, expected [{d}]",
                word=word,
                d=d,
            )
    rows = {}
    for word in dict.fromkeys(words):
        if word in known:
            rows[word] = known[word].to(torch.float64)
        else:
            drawn = torch.randn(d, generator=generator, dtype=torch.float64)  # [d]
            rows[word] = torch.round(drawn, decimals=decimals)
    return rows


@dataclass(frozen=True)
class InContext:
    """One sentence: its rows projected one by one, and each position's prefix average
    of the values."""

    words: tuple[str, ...]  # [N]
    qkv: QKVTrace  # x [N, d], q [N, d_k], k [N, d_k], v [N, d_v], scores [N, N]
    average: torch.Tensor  # [N, d_v]: row i the mean of the rows 0..i of v

    def at(self, word: str) -> int:
        """The word's first position in the sentence."""
        return self.words.index(word)

    def prefix(self, word: str) -> tuple[str, ...]:
        """The words the prefix average at the word's first position reads: 0..i."""
        return self.words[: self.at(word) + 1]


def in_context(
    words: Sequence[str],
    rows: Mapping[str, torch.Tensor],
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
) -> InContext:
    """Stack the words' rows into X [N, d], project them (Q = X W_q, ...), and average V
    over each position's prefix.

    Row i of Q, K and V depends on x_i alone, so a word has the same q, k, v rows in
    every sentence it occurs in; the prefix average is the first thing that mixes.
    """
    if not 1 <= len(words) <= MAX_RANDOM_SIZE:
        raise ParameterError(
            "projection_size",
            f"a sentence needs 1 to {MAX_RANDOM_SIZE} words, got {len(words)}",
            name="N",
            value=len(words),
            limit=MAX_RANDOM_SIZE,
        )
    missing = [w for w in words if w not in rows]
    if missing:
        raise ParameterError(
            "projection_word_missing", f"no row for {missing[0]!r}", word=missing[0]
        )
    x = torch.stack([rows[w] for w in words])  # [N, d]
    trace = project_qkv(x, w_q, w_k, w_v)
    return InContext(tuple(words), trace, prefix_average(trace.v))


@dataclass(frozen=True)
class TwoContexts:
    """One word in two sentences: its rows after the per-row projections, in each."""

    word: str
    a: InContext
    b: InContext
    rows: dict[str, torch.Tensor]  # the word's input row for every word: [d] each
    gap: float  # largest |difference| of the word's q, k and v rows between a and b: 0.0

    def rows_of(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The word's "x", "q", "k" or "v" row in sentence a and in sentence b."""
        return tuple(getattr(s.qkv, name)[s.at(self.word)] for s in (self.a, self.b))


def two_contexts(
    word: str,
    words_a: Sequence[str],
    words_b: Sequence[str],
    known: Mapping[str, torch.Tensor],
    generator: torch.Generator,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
) -> TwoContexts:
    """`word` in two sentences, with one row per word (``word_rows``: `known` rows, the
    others drawn from `generator`) and the same W_q, W_k, W_v in both."""
    d = w_q.shape[0]
    rows = word_rows([*words_a, *words_b], known, d, generator)
    a, b = in_context(words_a, rows, w_q, w_k, w_v), in_context(words_b, rows, w_q, w_k, w_v)
    for sentence in (a, b):
        if word not in sentence.words:
            raise ParameterError(
                "projection_word_missing", f"{word!r} is not in both sentences", word=word
            )
    pairs = [getattr(s.qkv, n)[s.at(word)] for n in "qkv" for s in (a, b)]  # [d_k] / [d_v]
    gap = max(float((pairs[i] - pairs[i + 1]).abs().max()) for i in (0, 2, 4))
    return TwoContexts(word, a, b, rows, gap)
