"""From logits to the next token: temperature, top-k, top-p, then sampling.

Order of operations (the usual one in generation libraries): divide by the
temperature, softmax, keep the top-k, renormalise, keep the top-p nucleus of what
is left, renormalise. All work on the last dimension, so logits may be [V] or [..., V].

Also here: ``draw_counts`` (many seeded draws at once, with the counts they are
expected to give and how far they typically stray) and ``long_tail`` (a real
vocabulary's distribution summarised as a few candidates and everything else).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError

# Cumulative sums are rounded: a set whose sum equals p up to this much "reaches" p,
# so p = 0.8 over [0.5, 0.3, 0.2] keeps two tokens, not three.
TOP_P_TOLERANCE = 1e-6
MAX_DRAWS = 100_000  # a "draw n times" experiment on a shared server stays small
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class SamplingTrace:
    scaled_logits: torch.Tensor  # [..., V] logits / T (temperature 0: logits unchanged)
    probs_before_filter: torch.Tensor  # [..., V] softmax(scaled_logits); one-hot if T = 0
    kept: torch.Tensor  # [..., V] bool: survived greedy / top-k / top-p
    probs: torch.Tensor  # [..., V] renormalised over the kept tokens
    # The cut in its two stages (filled by next_token_probs; None when built by hand):
    kept_top_k: torch.Tensor | None = None  # [..., V] bool: survived greedy / top-k
    after_top_k: torch.Tensor | None = None  # [..., V] renormalised: what top-p reads
    kept_mass: torch.Tensor | None = None  # [..., 1] probs_before_filter summed over kept


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> SamplingTrace:
    """Next-token distribution after temperature, top-k and top-p.

    temperature 0 means greedy: a one-hot at the argmax (ties go to the lowest index),
    the limit of softmax(logits / T) as T -> 0 when the maximum is unique.
    top_k larger than the vocabulary keeps everything. top_p keeps the smallest set of
    tokens, taken in descending probability, whose cumulative probability reaches p;
    always at least one token. Ties in probability are ordered by lower index first.
    Raises ParameterError for negative/NaN temperature, top_k < 1, top_p outside (0, 1],
    or logits containing NaN or infinity.
    """
    _check_settings(logits, temperature, top_k, top_p)
    if temperature == 0:
        scaled = logits.clone()
        before = _one_hot_argmax(logits)
    else:
        # Divide in float64: a tiny T (1e-300) is 0 in float32, and x / 0 would be NaN.
        scaled = (logits.double() / temperature).to(logits.dtype)
        # Shift by the max before dividing: with a tiny T, logits / T can overflow to inf
        # (and softmax(inf) is NaN) while the differences stay well defined.
        shifted = (logits - logits.max(dim=-1, keepdim=True).values).double()
        before = torch.softmax(shifted / temperature, dim=-1).to(logits.dtype)
    # Greedy keeps only the argmax; otherwise every token starts as a candidate.
    kept = before > 0 if temperature == 0 else torch.ones_like(before, dtype=torch.bool)
    probs = before
    if top_k is not None:
        kept = kept & _top_k_mask(probs, top_k)
        probs = _renormalise(before, kept)
    kept_top_k, after_top_k = kept, probs
    if top_p is not None and top_p < 1:  # p = 1 keeps everything: no filter
        kept = kept & _top_p_mask(probs, top_p)
        probs = _renormalise(before, kept)
    mass = before.masked_fill(~kept, 0.0).sum(dim=-1, keepdim=True)
    return SamplingTrace(scaled, before, kept, probs, kept_top_k, after_top_k, mass)


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """Draw one token id from probs [V] with torch.multinomial and this generator.

    The generator must live on probs' device; a seeded generator makes draws repeatable.
    Raises probs_not_1d, or probs_invalid (negative, not finite, or all zero: torch would
    raise "probability tensor contains either inf, nan or element < 0").
    """
    if probs.dim() != 1:
        raise ParameterError(
            "probs_not_1d",
            f"sample needs one distribution [V], got shape {list(probs.shape)}",
            shape=list(probs.shape),
        )
    _check_probs(probs)
    return int(torch.multinomial(probs, 1, generator=generator).item())


def _check_probs(probs: torch.Tensor) -> None:
    if not bool(torch.isfinite(probs).all()) or bool((probs < 0).any()) or probs.sum() <= 0:
        raise ParameterError("probs_invalid", "probabilities must be finite, >= 0, not all 0")


class Draws(NamedTuple):
    """n seeded draws from one distribution, and what they are expected to give."""

    draws: torch.Tensor  # [n] long: the drawn ids, in order
    counts: torch.Tensor  # [V] long: how often each id was drawn
    expected: torch.Tensor  # [V] n * p: the average count over many repeats
    spread: torch.Tensor  # [V] sqrt(n p (1 - p)): how far a count typically strays


def draw_counts(probs: torch.Tensor, n: int, seed: int) -> Draws:
    """Draw n ids from probs [V] (with replacement) with a generator seeded by seed.

    One call to torch.multinomial(probs, n, replacement=True) on a fresh
    torch.Generator().manual_seed(seed): the same seed gives the same draws. Each count
    is binomial(n, p), so it has mean n p and standard deviation sqrt(n p (1 - p)).
    Raises probs_not_1d, probs_invalid (negative, not finite, or all zero),
    draws_invalid (n outside 1..MAX_DRAWS) or seed_invalid (outside 0..MAX_SEED).
    """
    if probs.dim() != 1:
        raise ParameterError(
            "probs_not_1d",
            f"draw_counts needs one distribution [V], got shape {list(probs.shape)}",
            shape=list(probs.shape),
        )
    _check_probs(probs)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_DRAWS:
        raise ParameterError(
            "draws_invalid", f"draw between 1 and {MAX_DRAWS} times, got {n}",
            n=n, limit=MAX_DRAWS,
        )
    generator = seeded_generator(seed, probs.device)
    draws = torch.multinomial(probs, n, replacement=True, generator=generator)  # [n]
    counts = torch.bincount(draws, minlength=probs.shape[0])  # [V]
    p = (probs / probs.sum()).to(torch.float64)  # as multinomial reads it: normalised
    return Draws(draws, counts, n * p, torch.sqrt(n * p * (1 - p)))


def seeded_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A fresh generator on device, seeded: the same seed repeats the same draws."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ParameterError(
            "seed_invalid", f"a seed is a whole number from 0 to {MAX_SEED}, got {seed}",
            seed=seed, limit=MAX_SEED,
        )
    return torch.Generator(device=device).manual_seed(seed)


class LongTail(NamedTuple):
    """A large vocabulary's next-token distribution: a few named candidates and the rest."""

    vocab: int  # V: one logit (and one probability) per entry
    top: tuple[float, ...]  # the candidates' probabilities, largest first
    top_mass: float  # sum(top)
    rest_mass: float  # 1 - sum(top): shared by every other entry
    rest_count: int  # V - len(top): how many entries share it


def long_tail(top: tuple[float, ...], vocab: int) -> LongTail:
    """Summarise a distribution over vocab entries by its top candidates and the rest.

    Raises long_tail_invalid unless 0 < len(top) < vocab, every p >= 0 and sum(top) <= 1.
    """
    total = math.fsum(top)
    if not 0 < len(top) < vocab or any(not 0 <= p <= 1 for p in top) or total > 1 + 1e-9:
        raise ParameterError(
            "long_tail_invalid",
            "need 1 to vocab - 1 candidates with probabilities that add up to at most 1",
            vocab=vocab,
        )
    return LongTail(vocab, tuple(top), total, max(0.0, 1.0 - total), vocab - len(top))


# The source article's example: a vocabulary of 100,000 entries, three candidates at
# 35 %, 20 % and 8 %, and 37 % spread over everything else.
ARTICLE_TAIL = long_tail((0.35, 0.20, 0.08), 100_000)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_settings(
    logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    # A value of the wrong kind (text, a bool) gets the same keyed error as one out of
    # range, never a TypeError from the comparison.
    if not _is_number(temperature) or math.isnan(temperature) or temperature < 0:
        raise ParameterError(
            "temperature_negative",
            f"temperature must be >= 0 (0 = greedy), got {temperature!r}",
            temperature=str(temperature),
        )
    if top_k is not None and (not _is_number(top_k) or not float(top_k).is_integer()
                              or top_k < 1):
        raise ParameterError("top_k_invalid", f"top_k must be a whole number >= 1, got "
                             f"{top_k!r}", top_k=str(top_k))
    if top_p is not None and (not _is_number(top_p) or not 0 < top_p <= 1):
        raise ParameterError("top_p_invalid", f"top_p must be in (0, 1], got {top_p!r}",
                             top_p=str(top_p))
    if logits.numel() == 0:
        raise ParameterError("logits_empty", "logits must contain at least one value")
    if not bool(torch.isfinite(logits).all()):
        raise ParameterError(
            "logits_not_finite", "logits must be finite numbers (no NaN or infinity)"
        )


def _one_hot_argmax(logits: torch.Tensor) -> torch.Tensor:
    best = logits.argmax(dim=-1, keepdim=True)  # first maximum: ties -> lowest index
    return torch.zeros_like(logits).scatter_(-1, best, 1.0)


def _descending_order(probs: torch.Tensor) -> torch.Tensor:
    # stable: equal probabilities keep index order, so filters are deterministic
    return torch.sort(probs, dim=-1, descending=True, stable=True).indices


def _top_k_mask(probs: torch.Tensor, k: int) -> torch.Tensor:
    order = _descending_order(probs)
    rank_kept = torch.arange(probs.shape[-1], device=probs.device) < k  # [V] by rank
    return _by_rank_to_by_token(rank_kept.expand_as(probs), order)


def _top_p_mask(probs: torch.Tensor, p: float) -> torch.Tensor:
    order = _descending_order(probs)
    sorted_probs = probs.gather(-1, order).to(torch.float64)  # float64: sums stay exact
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    # Keep a token while the ones ranked above it have not yet reached p;
    # the first token always has mass_before = 0 < p.
    rank_kept = mass_before < p - TOP_P_TOLERANCE
    rank_kept[..., 0] = True
    return _by_rank_to_by_token(rank_kept, order)


def _by_rank_to_by_token(rank_kept: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Scatter a mask indexed by rank back to vocabulary order."""
    return torch.zeros_like(rank_kept).scatter(-1, order, rank_kept)


def _renormalise(probs: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    masked = probs.masked_fill(~kept, 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)
